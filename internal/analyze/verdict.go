package analyze

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

var verdictText = map[string]string{
	model.CatCPU:          "CPU-bound: the busy threads spent %.0f%% of their time running on a CPU",
	model.CatCPUWait:      "CPU-starved: the busy threads spent %.0f%% of their time runnable but waiting for a CPU",
	model.CatStorageRead:  "storage-read-bound: %.0f%% of the busy threads' time was blocked reading from storage",
	model.CatStorageWrite: "storage-write-bound: %.0f%% of the busy threads' time was blocked writing to storage (direct writes, dirty-page throttling, writeback)",
	model.CatStorageSync:  "sync-bound: %.0f%% of the busy threads' time was blocked flushing to storage (fsync, fdatasync, O_SYNC writes)",
	model.CatLock:         "lock-bound: %.0f%% of the busy threads' time was spent waiting for other threads (futexes, kernel locks)",
	model.CatSleep:        "mostly waiting on timers, pipes, sockets or children (%.0f%% of the busy threads' time): the work happens elsewhere",
	model.CatOther:        "%.0f%% of the busy threads' time was off the CPU for other reasons",
	model.CatUnknown:      "where %.0f%% of the time went is unknown to the /proc observer: run as root for eBPF time accounting",
}

// onPath words the verdict's texts for the critical path.
var onPath = strings.NewReplacer("the busy threads spent", "the critical path spent", "of their time", "of its time",
	"the busy threads' time", "the critical path's time")

// cpuNamedShare: the verdict names the time on a CPU inside the IO calls
// it is about when that is 1% of the time judged or more: less is noise
// beside the waits, and the figures print in whole percents.
const cpuNamedShare = 0.01

// basisTime is the time the verdict judges, the critical path's or the
// busy threads', by verdict group (a category, with the CPU time inside
// IO calls in the storage it waited for), and the parts of each storage
// group spent inside IO calls: in[group][activity][state], seconds.
type basisTime struct {
	name  string
	total float64
	group map[string]float64
	in    map[string]map[string]map[string]float64
}

func (b *basisTime) add(key cellKey, s float64) {
	b.group[key.group] += s
	if !ioActivities[key.activity] || !slices.Contains(storageCats, key.group) {
		return
	}
	if b.in[key.group] == nil {
		b.in[key.group] = map[string]map[string]float64{}
	}
	if b.in[key.group][key.activity] == nil {
		b.in[key.group][key.activity] = map[string]float64{}
	}
	b.in[key.group][key.activity][key.state] += s
}

// basisOf is the critical path's time when there is one, else the busy
// threads': by cell with a wait-for graph, else by category, with the
// sync calls' split (ext4) moving their time on a CPU to storage-sync.
func basisOf(ta *model.TimeAccounting, c *cells) basisTime {
	b := basisTime{name: "busy threads", group: map[string]float64{}, in: map[string]map[string]map[string]float64{}}
	switch {
	case c != nil && c.path != nil && criticalSeconds(ta) > 0:
		b.name = "critical path"
		for x, s := range c.path {
			b.add(c.keys[x], s)
		}
	case c != nil:
		for k := range c.busy {
			for x, s := range c.own[k] {
				b.add(c.keys[x], s)
			}
		}
	default:
		maps.Copy(b.group, ta.Total)
		syncSplitGroups(ta, &b)
	}
	for _, g := range slices.Sorted(maps.Keys(b.group)) {
		b.total += b.group[g]
	}
	return b
}

// syncSplitGroups counts the sync calls' time on a CPU (SyncCalls.Split)
// toward storage-sync in a record without a wait-for graph, when the calls
// blocked for ioBlockedShare of their time.
func syncSplitGroups(ta *model.TimeAccounting, b *basisTime) {
	var split map[string]float64
	sec, blocked := 0.0, 0.0
	for _, s := range ta.Syncs {
		if s.SplitSec <= 0 {
			continue
		}
		if split == nil {
			split = map[string]float64{}
		}
		sec += s.SplitSec
		for cat, v := range s.Split {
			split[cat] += v
			if slices.Contains(storageCats, cat) {
				blocked += v
			}
		}
	}
	if sec <= 0 || blocked < ioBlockedShare*sec {
		return
	}
	// The time on a CPU only: waiting for one inside the calls stays
	// cpu-wait (activity.go).
	cpu := min(split[model.CatCPU], b.group[model.CatCPU])
	b.group[model.CatCPU] -= cpu
	b.group[model.CatStorageSync] += cpu
	b.in[model.CatStorageSync] = map[string]map[string]float64{"sync": {
		model.StateStorageSync: min(split[model.CatStorageSync], b.group[model.CatStorageSync]-cpu),
		model.StateCPU:         cpu}}
}

// verdict names the group (the category, with the time on a CPU inside IO
// calls counted in their storage) with the largest share of the critical
// path's time (critical.go), or of the busy threads' when the record has
// no wait-for graph. A storage verdict whose calls ran on a CPU says how
// their time divides.
func verdict(ta *model.TimeAccounting, c *cells) *model.Verdict {
	b := basisOf(ta, c)
	if b.total <= 0 {
		return idleVerdict(ta)
	}
	totals := b.group
	best, second := "", ""
	for _, c := range model.Categories {
		switch {
		case best == "" || totals[c] > totals[best]:
			best, second = c, best
		case second == "" || totals[c] > totals[second]:
			second = c
		}
	}
	text := verdictText[best]
	if b.name == "critical path" && best == model.CatSleep {
		text = sleepVerdict(ta)
	}
	if b.name == "critical path" {
		text = onPath.Replace(text)
	}
	v := &model.Verdict{Primary: best, Basis: b.name, Summary: fmt.Sprintf(text, totals[best]/b.total*100)}
	if act := ioActivity(b, best); act != "" {
		v.Activity, v.Split = act, map[string]float64{}
		for st, s := range b.in[best][act] {
			v.Split[st] = s / b.total
		}
		if v.Split[model.StateCPU] >= cpuNamedShare {
			v.Summary = insideCalls(ta, b, best, act, v.Split)
		}
	}
	if second != "" && totals[second] > 0 && totals[second] >= closeSecond*totals[best] {
		v.Secondary = second
		v.Summary += fmt.Sprintf("; nearly as much went to %s (%.0f%%): both are on the path, an experiment tells which one limits", second, totals[second]/b.total*100)
	}
	// Who ended the waits of a blocked verdict: the journal's kernel
	// thread, the disk, the thread that let go of the lock.
	switch best {
	case model.CatLock, model.CatStorageRead, model.CatStorageWrite, model.CatStorageSync, model.CatOther:
		if l, share := topLock(ta); best == model.CatLock && share >= 0.5 {
			v.Summary += fmt.Sprintf("; %.0f%% of the lock waits on %s", share*100, l)
		}
		if by := endedBy(ta, best, 2); len(by) > 0 {
			v.Summary += "; its waits were ended " + strings.Join(by, ", ")
		}
	}
	if best == model.CatCPU || best == model.CatCPUWait {
		if by := cpuByProgram(ta); by != "" {
			v.Summary += "; " + by
		}
	}
	if best == model.CatCPUWait {
		if took := cpuTakers(ta); took != "" {
			v.Summary += "; " + took
		}
	}
	if n := pollers(ta); len(n) > 0 {
		v.Summary += fmt.Sprintf("; left out: %s, which slept on timers or waited the whole window while the others worked", strings.Join(n, ", "))
	}
	return v
}

// cpuTakers names what took the CPUs the workload waited for, when
// processes outside it did a third of that waiting or more (each wait for
// a CPU ends with the task that had it: pgbench observed alone waits for
// the CPUs its server's backends hold): "the CPUs it waited for went to
// processes outside the workload (80% of that wait): postgres (pids ...,
// children of pid 4200) 90%, ...: observe them with the workload, -p
// 4200 beside the command". "" otherwise.
func cpuTakers(ta *model.TimeAccounting) string {
	outside := map[outsider]float64{}
	var wait, out float64
	for _, w := range ta.Waits {
		if w.Category != model.CatCPUWait || w.Seconds <= 0 {
			continue
		}
		wait += w.Seconds
		if addOutsider(outside, w) {
			out += w.Seconds
		}
	}
	if wait <= 0 || out < cpuTakersShare*wait {
		return ""
	}
	names := outsidersByName(outside, out, "had them for")
	if names == "" {
		return ""
	}
	return fmt.Sprintf("the CPUs it waited for went to processes outside the workload (%.0f%% of that wait): ", 100*out/wait) +
		names + " beside the command"
}

// cpuTakersShare: the verdict names the processes outside the workload
// that took the CPUs it waited for when they did this share of the
// waiting or more.
const cpuTakersShare = 1.0 / 3

// cpuByProgram says how the busy threads' CPU time divides between the
// programs of a workload that ran several (a server and its client, -p
// PID -- CMD): "the CPU time went to mariadbd 77%, sysbench 23%"; "" with
// one program, or when one took 95% or more.
func cpuByProgram(ta *model.TimeAccounting) string {
	progs := ta.ProgramsCPU()
	total := 0.0
	for _, p := range progs {
		total += p.CPUSec
	}
	if len(progs) < 2 || total <= 0 || progs[0].CPUSec >= 0.95*total {
		return ""
	}
	var parts []string
	for _, p := range progs[:min(4, len(progs))] {
		if p.CPUSec >= 0.01*total {
			parts = append(parts, fmt.Sprintf("%s %.0f%%", p.Name, 100*p.CPUSec/total))
		}
	}
	return "the CPU time went to " + strings.Join(parts, ", ")
}

// idleVerdict is the verdict of a workload none of whose threads was
// woken in the window: each waited the whole window for something that
// did not come (a server without clients, a pool without work). Its
// primary is the category they waited in; only a record without a thread
// has none.
func idleVerdict(ta *model.TimeAccounting) *model.Verdict {
	sec := map[string]float64{}
	n, total := 0, 0.0
	for _, t := range ta.Threads {
		if t.WallSec <= 0 {
			continue
		}
		n++
		for cat, s := range t.Seconds {
			sec[cat] += s
			total += s
		}
	}
	if n == 0 || total <= 0 {
		return &model.Verdict{Primary: "", Summary: "no thread of the workload was seen in the window"}
	}
	best := ""
	var parts []string
	for _, cat := range model.Categories {
		if best == "" || sec[cat] > sec[best] {
			best = cat
		}
	}
	for _, cat := range model.Categories {
		if s := sec[cat] / total; s >= cpuNamedShare {
			parts = append(parts, fmt.Sprintf("%s %.0f%%", cat, s*100))
		}
	}
	return &model.Verdict{Primary: best, Basis: "idle threads",
		Summary: fmt.Sprintf("idle: the workload's %d %s waited the whole window for something that did not come in it (%s); nothing ran to judge",
			n, plural(n, "thread", "threads"), strings.Join(parts, ", "))}
}

// ioActivity is the IO activity with the most time in a storage group;
// "" for another group or none.
func ioActivity(b basisTime, group string) string {
	top, topSec := "", 0.0
	for _, a := range slices.Sorted(maps.Keys(b.in[group])) {
		sec := 0.0
		for _, st := range model.States {
			sec += b.in[group][a][st]
		}
		if sec > topSec {
			top, topSec = a, sec
		}
	}
	return top
}

// boundWords name a storage verdict.
var boundWords = map[string]string{
	model.CatStorageRead: "storage-read-bound", model.CatStorageWrite: "storage-write-bound", model.CatStorageSync: "sync-bound",
}

// blockedWords say what a thread blocked in a storage category waited for.
var blockedWords = map[string]string{
	model.CatStorageRead:  "blocked on the device",
	model.CatStorageWrite: "blocked on the device (direct writes, dirty-page throttling, writeback)",
	model.CatStorageSync:  "blocked on the device or the journal",
}

// callWords say what IO calls an activity holds, and what their time on
// a CPU is.
var callWords = map[string]struct{ calls, cpu string }{
	"sync":  {"sync calls (%s)", "on a CPU in the kernel's sync path"},
	"read":  {"read calls (read, pread64, readv, preadv)", "on a CPU in the kernel's read path"},
	"write": {"write calls (write, pwrite64, writev, pwritev)", "on a CPU in the kernel's write path"},
	"aio":   {"asynchronous IO calls (io_submit, io_getevents, io_pgetevents, io_uring_enter)", "on a CPU submitting and reaping"},
}

// insideCalls is a storage verdict that names the time inside its calls
// by state: "sync-bound: 72% of the critical path's time was inside sync
// calls (fsync, fdatasync): 41% blocked on the device or the journal, 31%
// on a CPU in the kernel's sync path".
func insideCalls(ta *model.TimeAccounting, b basisTime, group, act string, split map[string]float64) string {
	w := callWords[act]
	calls := w.calls
	if act == "sync" {
		calls = fmt.Sprintf(calls, syncKindWords(ta, ta.Waits == nil))
	}
	blocked := blockedWords[group]
	if act == "aio" {
		blocked = "waiting for the device"
	}
	inside := 0.0
	for _, st := range model.States {
		inside += split[st]
	}
	var parts []string
	if s := split[group]; s >= cpuNamedShare {
		parts = append(parts, fmt.Sprintf("%.0f%% %s", s*100, blocked))
	}
	parts = append(parts, fmt.Sprintf("%.0f%% %s", split[model.StateCPU]*100, w.cpu))
	if s := split[model.StateCPUWait]; s >= cpuNamedShare {
		parts = append(parts, fmt.Sprintf("%.0f%% waiting for a CPU", s*100))
	}
	whose := "the busy threads'"
	if b.name == "critical path" {
		whose = "the critical path's"
	}
	out := fmt.Sprintf("%s: %.0f%% of %s time was inside %s: %s", boundWords[group], inside*100, whose, calls, strings.Join(parts, ", "))
	if all := b.group[group] / b.total; all-inside >= cpuNamedShare {
		out += fmt.Sprintf("; with other calls' %s time, %.0f%% in all", group, all*100)
	}
	return out
}

// syncKindWords lists the kinds of sync call made ("fsync, fdatasync"):
// O_SYNC writes only when asked (they are write calls where the waits
// tell activities apart).
func syncKindWords(ta *model.TimeAccounting, writes bool) string {
	var kinds []string
	for _, s := range ta.Syncs {
		switch {
		case s.Count <= 0 || s.Kind == "other":
		case s.Kind == "write":
			if writes {
				kinds = append(kinds, "O_SYNC writes")
			}
		default:
			kinds = append(kinds, s.Kind)
		}
	}
	if len(kinds) == 0 {
		return "fsync, fdatasync"
	}
	return strings.Join(kinds, ", ")
}

// pollers names the threads criticalPath left out as pollers.
func pollers(ta *model.TimeAccounting) []string {
	var out []string
	for _, t := range ta.Threads {
		if t.Poller {
			out = append(out, fmt.Sprintf("%s (%d)", t.Comm, t.TID))
		}
	}
	return out
}

// sleepVerdict says what a critical path that sleeps waits for: timers
// (the workload paces itself), something outside it, or nothing that ended
// in the window. Its one %.0f is the sleep's share.
func sleepVerdict(ta *model.TimeAccounting) string {
	by := map[string]float64{}
	acts := map[string]float64{}
	count := map[string]int64{}
	outside := map[outsider]float64{}
	skip := map[int]bool{}
	for _, t := range ta.Threads {
		if t.Idle || t.Poller {
			skip[t.TID] = true
		}
	}
	for _, w := range ta.Waits {
		if w.Category != model.CatSleep || skip[w.TID] {
			continue
		}
		by[w.Waker] += w.Seconds
		addOutsider(outside, w)
		if w.Waker == model.WakerTimer {
			acts[w.Activity] += w.Seconds
			count[w.Activity] += w.Count
		}
	}
	top := ""
	for _, k := range []string{model.WakerTimer, model.WakerOutside, model.WakerSoftirq, model.WakerKthread, model.WakerIRQ, model.WakerNone, model.WakerPeer} {
		if top == "" || by[k] > by[top] {
			top = k
		}
	}
	switch top {
	case model.WakerTimer:
		act := ""
		for a, s := range acts {
			if act == "" || s > acts[act] || s == acts[act] && a < act {
				act = a
			}
		}
		rate := ""
		if ta.WindowSec > 0 {
			rate = fmt.Sprintf(", %s a second", units.FormatCount(int64(float64(count[act])/ta.WindowSec)))
		}
		return "timer-bound: %.0f%% of the critical path's time was asleep until a timer (" + activityWords[act] + rate +
			"): the workload paces itself, and runs no faster than its timers fire"
	case model.WakerOutside:
		// Name the process when one woke most of it: the server a client
		// waits on, or the client a server waits for.
		if o, sec := topOutsider(outside); sec >= 0.5*by[top] {
			return "waiting for " + strings.ReplaceAll(fmt.Sprintf("%s (pid %d)", o.comm, o.pid), "%", "%%") +
				", outside the workload (%.0f%% of the critical path's time asleep until it woke it): observe it with the workload, -p " + fmt.Sprint(o.pid) + " beside the command"
		}
		// Several processes of one name (a server's backends, one per
		// client connection) or of several: the names that woke most of
		// it, with their processes.
		if names := outsidersByName(outside, by[top], "woke it for"); names != "" {
			return "waiting for processes outside the workload (%.0f%% of the critical path's time asleep until one woke it): " +
				strings.ReplaceAll(names, "%", "%%") + " beside the command"
		}
		fallthrough
	case model.WakerSoftirq, model.WakerIRQ, model.WakerKthread:
		return "waiting for something outside the workload (%.0f%% of the critical path's time asleep until " + wakerWords[top] + "): the work happens elsewhere"
	}
	return verdictText[model.CatSleep]
}

// outsider is a process outside the workload that ended its waits, with
// its parent (0: unknown).
type outsider struct {
	pid  int
	comm string
	ppid int
}

// addOutsider adds w's time to its waker's when a process outside the
// workload ended it, and says whether one did.
func addOutsider(by map[outsider]float64, w model.Wait) bool {
	if w.Waker != model.WakerOutside || w.WakerPID == 0 {
		return false
	}
	by[outsider{w.WakerPID, w.WakerComm, w.WakerPPID}] += w.Seconds
	return true
}

// topOutsider is the outsider that ended the most waiting (by time; the
// lower pid on a tie), and that time.
func topOutsider(by map[outsider]float64) (outsider, float64) {
	var top outsider
	best := -1.0
	for o, s := range by {
		if s > best || s == best && o.pid < top.pid {
			top, best = o, s
		}
	}
	return top, best
}

// outsidersByName words the outsiders that ended sec of waiting, by
// name, most first, the first with verb ("woke it for"): at most three names that ended 1% of it or more, and
// four pids of each: "postgres (pids 4242, 4243 and 6 more) woke it for
// 90%, sshd (pid 99) 5% of that: observe them with the workload, -p 4242
// -p 4243 -p 99". The processes of one name that share a parent (a
// server's backends) are observed through it: "-p 4200". A name is
// grouped by that parent: two servers of one name (two PostgreSQL
// clusters) are two groups, each with its own -p, and a server's own
// process (the postmaster) joins its children's group.
func outsidersByName(by map[outsider]float64, sec float64, verb string) string {
	type name struct {
		comm   string
		parent int // the parent its processes share (> 1), else 0
		sec    float64
		pids   []outsider
	}
	type group struct {
		comm   string
		parent int
	}
	groupOf := func(o outsider) group {
		if o.ppid > 1 {
			return group{o.comm, o.ppid}
		}
		return group{o.comm, 0}
	}
	parents := map[group]bool{}
	for o := range by {
		parents[groupOf(o)] = true
	}
	at := map[group]*name{}
	for o, s := range by {
		g := groupOf(o)
		if parents[group{o.comm, o.pid}] {
			g = group{o.comm, o.pid} // the parent of others of its name
		}
		if at[g] == nil {
			at[g] = &name{comm: o.comm, parent: g.parent}
		}
		at[g].sec += s
		at[g].pids = append(at[g].pids, o)
	}
	var names []*name
	for _, n := range at {
		if sec <= 0 || n.sec < 0.01*sec {
			continue
		}
		slices.SortFunc(n.pids, func(a, b outsider) int { return cmp.Or(cmp.Compare(by[b], by[a]), cmp.Compare(a.pid, b.pid)) })
		names = append(names, n)
	}
	if len(names) == 0 {
		return ""
	}
	slices.SortFunc(names, func(a, b *name) int {
		return cmp.Or(cmp.Compare(b.sec, a.sec), strings.Compare(a.comm, b.comm), cmp.Compare(a.parent, b.parent))
	})
	var parts, flags []string
	for i, n := range names[:min(3, len(names))] {
		pids := n.pids[:min(4, len(n.pids))]
		var ps []string
		for _, p := range pids {
			ps = append(ps, fmt.Sprint(p.pid))
		}
		who := "pid " + ps[0]
		if len(n.pids) > 1 {
			who = "pids " + strings.Join(ps, ", ")
			if more := len(n.pids) - len(pids); more > 0 {
				who += fmt.Sprintf(" and %d more", more)
			}
		}
		if pp := n.parent; pp > 1 && len(n.pids) > 1 {
			who += fmt.Sprintf(", children of pid %d", pp)
			flags = append(flags, fmt.Sprintf("-p %d", pp))
		} else {
			for _, p := range pids {
				flags = append(flags, fmt.Sprintf("-p %d", p.pid))
			}
		}
		of := ""
		if i == 0 {
			of = " " + verb
		}
		parts = append(parts, fmt.Sprintf("%s (%s)%s %.0f%%", n.comm, who, of, 100*n.sec/sec))
	}
	return strings.Join(parts, ", ") + " of that: observe them with the workload, " + strings.Join(flags, " ")
}

// activityWords say what a thread was doing, by Wait.Activity.
var activityWords = map[string]string{
	"user": "user code", "fault": "page faults", "read": "read calls", "write": "write calls", "sync": "sync calls",
	"open": "open, stat and other metadata calls", "futex": "futex waits", "poll": "poll, select or epoll with a timeout",
	"sleep": "nanosleep or clock_nanosleep", "child": "waiting for children", "net": "socket calls",
	"aio": "asynchronous IO calls (io_submit, io_getevents, io_pgetevents, io_uring_enter)", "other": "other syscalls",
}

// wakerWords say what ended a wait, by Wait.Waker.
var wakerWords = map[string]string{
	model.WakerOutside: "a process outside the workload woke it", model.WakerSoftirq: "the network or another softirq woke it",
	model.WakerIRQ: "an interrupt woke it", model.WakerKthread: "a kernel thread woke it",
}

// closeSecond: a second category with at least 80% of the first's time is
// reported beside it. Accounting alone cannot rank two causes that close
// (CPU time spent inside fdatasync, for one, is CPU time caused by syncing).
const closeSecond = 0.8
