package rows

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/proctree"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// Accounting is the busy threads' time per category.
type Accounting struct {
	// Busy and Idle count the threads; idle ones waited for work the whole
	// window and are left out of the totals.
	Busy, Idle int
	TotalSec   float64
	// Cats are the categories the record has, in display order (unknown
	// only when it holds time).
	Cats []Cat
	// CPUSplit is true when the CPU time's user and system parts are
	// known; CPUUser is the user part's share of it.
	CPUSplit bool
	CPUUser  float64
	// Dropped warns that events were lost; "" when none was.
	Dropped string
	// Unseen says how many of the workload's switches had no event and
	// how they were timed; "" when none.
	Unseen string
}

// Cat is one category's time and its share of a whole.
type Cat struct {
	Name  string
	Sec   float64
	Share float64
}

// AccountingOf sums the time accounting.
func AccountingOf(ta *model.TimeAccounting) Accounting {
	var a Accounting
	for _, t := range ta.Threads {
		if t.Idle {
			a.Idle++
		} else {
			a.Busy++
		}
	}
	// In a fixed order: a map's would change the sum's last bits from run
	// to run.
	for _, c := range slices.Sorted(maps.Keys(ta.Total)) {
		a.TotalSec += ta.Total[c]
	}
	for _, c := range model.Categories {
		s, ok := ta.Total[c]
		if !ok || (s == 0 && c == model.CatUnknown) {
			continue
		}
		share := 0.0
		if a.TotalSec > 0 {
			share = s / a.TotalSec
		}
		a.Cats = append(a.Cats, Cat{c, s, share})
	}
	if ta.UserSec+ta.SystemSec > 0 {
		a.CPUSplit, a.CPUUser = true, ta.UserSec/(ta.UserSec+ta.SystemSec)
	}
	if ta.Dropped > 0 {
		a.Dropped = DroppedOf(ta)
	}
	a.Unseen = UnseenSwitches(ta.Unseen)
	return a
}

// UnseenSwitches says how many of the workload's context switches the
// kernel made with no sched_switch event, and how they were timed; "" when
// none.
func UnseenSwitches(u *model.UnseenSwitches) string {
	if u == nil || u.Ins+u.Outs == 0 {
		return ""
	}
	n := u.Ins + u.Outs
	s := fmt.Sprintf("%d of the workload's context switches had no sched_switch event (%d on the whole machine): ", n, u.Switches)
	if untimed := n - u.InsTimed - u.OutsTimed; untimed > 0 {
		return s + fmt.Sprintf("%d timed from the kernel's schedstat record of the thread's arrival or queueing, %d not (their run or wait is counted in the state the thread was in before)", n-untimed, untimed)
	}
	return s + "each timed from the kernel's schedstat record of the thread's arrival or queueing"
}

// ThreadRow is one busy thread (or exited threads folded into one): its
// wall time and where it went.
type ThreadRow struct {
	PID, TID int
	// Name is the comm, "N× comm" for N exited threads folded together
	// (their walls add up; TID means nothing then).
	Name    string
	Folded  int
	Exited  bool
	Role    string
	WallSec float64
	// Seconds is the time per category; Largest the categories with time,
	// most first, each with its share of the wall time.
	Seconds map[string]float64
	Largest []Cat
	// OnPath: the record has a critical path; PathShare is then the share
	// of it this thread carried (its own time, and the waits of others
	// for it). Poller marks a thread left out of it (it slept on timers or
	// waited the whole window while others worked).
	OnPath    bool
	PathShare float64
	Poller    bool
}

// BusyThreads lists the busy threads, longest wall time first, at most n.
func BusyThreads(ta *model.TimeAccounting, n int) List[ThreadRow] {
	var busy []model.ThreadTime
	for _, t := range ta.Threads {
		if !t.Idle {
			busy = append(busy, t)
		}
	}
	sort.SliceStable(busy, func(i, j int) bool { return busy[i].WallSec > busy[j].WallSec })
	l := first(busy, n)
	out := List[ThreadRow]{Total: l.Total}
	cp := CriticalPathSec(ta)
	for _, t := range l.Rows {
		r := ThreadRow{PID: t.PID, TID: t.TID, Name: ThreadName(t.Comm, t.Title), Folded: t.Folded, Exited: t.Exited, Role: t.Role,
			WallSec: t.WallSec, Seconds: t.Seconds, OnPath: cp > 0, Poller: t.Poller}
		if cp > 0 {
			r.PathShare = t.CriticalSec / cp
		}
		if t.Folded > 0 {
			r.Name = fmt.Sprintf("%d× %s", t.Folded, ThreadName(t.Comm, t.Title))
		}
		for c, s := range t.Seconds {
			if s > 0 {
				share := 0.0
				if t.WallSec > 0 {
					share = s / t.WallSec
				}
				r.Largest = append(r.Largest, Cat{c, s, share})
			}
		}
		sort.Slice(r.Largest, func(i, j int) bool {
			if r.Largest[i].Sec != r.Largest[j].Sec {
				return r.Largest[i].Sec > r.Largest[j].Sec
			}
			return r.Largest[i].Name < r.Largest[j].Name
		})
		out.Rows = append(out.Rows, r)
	}
	return out
}

// SyncRow is one kind of sync call.
type SyncRow struct {
	Kind              string
	Count             int64
	TotalSec, MeanSec float64
	// MedianIn is the log2 bucket that holds the median call.
	MedianIn string
	Buckets  []model.Bucket
	// Split says how the calls' time divides between the CPU and the
	// waits ("on CPU 31%, waiting for a CPU 5%, blocked on storage 64%");
	// "" when not measured.
	Split string
}

// Syncs lists the sync calls by kind, in the record's order.
func Syncs(ta *model.TimeAccounting) []SyncRow {
	var out []SyncRow
	for _, s := range ta.Syncs {
		out = append(out, SyncRow{Kind: s.Kind, Count: s.Count, TotalSec: s.TotalSec,
			MeanSec: s.TotalSec / float64(max(s.Count, 1)), MedianIn: MedianBucket(s.Buckets, s.Count), Buckets: s.Buckets,
			Split: SyncSplit(s)})
	}
	return out
}

// splitWords says each accounting category as the state of a thread in a
// call.
var splitWords = map[string]string{
	model.CatCPU: "on CPU", model.CatCPUWait: "waiting for a CPU", model.CatStorageRead: "blocked on storage",
	model.CatStorageWrite: "blocked on storage", model.CatStorageSync: "blocked on storage", model.CatLock: "waiting on a lock",
	model.CatSleep: "asleep", model.CatOther: "other waits", model.CatUnknown: "unknown",
}

// SyncSplit says how a kind of sync call's time divides by state, largest
// first, in shares of the split calls' time; "" when not measured.
func SyncSplit(s model.SyncCalls) string {
	if s.SplitSec <= 0 || len(s.Split) == 0 {
		return ""
	}
	by := map[string]float64{}
	var names []string
	for _, c := range model.Categories {
		sec, ok := s.Split[c]
		if !ok || sec <= 0 {
			continue
		}
		w := splitWords[c]
		if _, seen := by[w]; !seen {
			names = append(names, w)
		}
		by[w] += sec
	}
	sort.SliceStable(names, func(i, j int) bool { return by[names[i]] > by[names[j]] })
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %.0f%%", n, by[n]/s.SplitSec*100))
	}
	return strings.Join(parts, ", ")
}

// MedianBucket names the log2 bucket that holds the median of count values,
// "[low, high)"; "" when the buckets do not hold half of them.
func MedianBucket(bs []model.Bucket, count int64) string {
	var seen int64
	for _, b := range bs {
		seen += b.Count
		if seen*2 >= count {
			return fmt.Sprintf("[%s, %s)", units.FormatNs(float64(b.LowNs)), units.FormatNs(float64(b.HighNs+1)))
		}
	}
	return ""
}

// SyncedFileRow is one file synced, with its mean sync time.
type SyncedFileRow struct {
	model.SyncedFile
	MeanSec float64
}

// SyncedFiles lists the files synced in the record's order (most time
// first), at most n.
func SyncedFiles(ta *model.TimeAccounting, n int) List[SyncedFileRow] {
	l := first(ta.SyncedFiles, n)
	out := List[SyncedFileRow]{Total: l.Total}
	for _, f := range l.Rows {
		switch {
		case f.Folded:
			f.Path = FoldedName(f.Path, f.FoldedFiles)
		case f.Gone:
			f.Path += " (gone at the end)"
		case f.FirstPath != "":
			f.Path += " (renamed from " + filepath.Base(f.FirstPath) + ")"
		}
		out.Rows = append(out.Rows, SyncedFileRow{f, f.TotalSec / float64(max(f.Count, 1))})
	}
	return out
}

// SyscallRow is one syscall summed over the threads, as strace -c -w
// shows it.
type SyscallRow struct {
	Name                      string
	Count, Errors             int64
	TotalSec, MeanSec, MaxSec float64
	// Pct is its share of the time in all syscalls, in percent.
	Pct float64
	// Buckets is its latency histogram, the threads' summed.
	Buckets []model.Bucket
}

// Syscalls lists the syscalls of all threads together, most time first, at
// most n; counted is false when the record has no syscall counts.
func Syscalls(ta *model.TimeAccounting, n int) (l List[SyscallRow], counted bool) {
	if ta.Syscalls == nil {
		return l, false
	}
	type agg struct {
		row     SyscallRow
		buckets map[int64]*model.Bucket
	}
	by := map[string]*agg{}
	var all float64
	for _, s := range ta.Syscalls {
		a := by[s.Name]
		if a == nil {
			a = &agg{row: SyscallRow{Name: s.Name}, buckets: map[int64]*model.Bucket{}}
			by[s.Name] = a
		}
		a.row.Count += s.Count
		a.row.Errors += s.Errors
		a.row.TotalSec += s.TotalSec
		a.row.MaxSec = max(a.row.MaxSec, s.MaxSec)
		all += s.TotalSec
		for _, b := range s.Buckets {
			if m := a.buckets[b.LowNs]; m != nil {
				m.Count += b.Count
			} else {
				c := b
				a.buckets[b.LowNs] = &c
			}
		}
	}
	list := make([]SyscallRow, 0, len(by))
	for _, a := range by {
		r := a.row
		r.MeanSec = r.TotalSec / float64(max(r.Count, 1))
		if all > 0 {
			r.Pct = r.TotalSec / all * 100
		}
		for _, b := range a.buckets {
			r.Buckets = append(r.Buckets, *b)
		}
		sort.Slice(r.Buckets, func(i, j int) bool { return r.Buckets[i].LowNs < r.Buckets[j].LowNs })
		list = append(list, r)
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].TotalSec != list[j].TotalSec {
			return list[i].TotalSec > list[j].TotalSec
		}
		return list[i].Name < list[j].Name
	})
	return first(list, n), true
}

// KernelAgreement is the accounting against the kernel's own figures, in
// one line ("" when the record has none): each check's two figures and
// how far apart they are, the judged ones first.
func KernelAgreement(ta *model.TimeAccounting) string {
	k := ta.Kernel
	if k == nil || len(k.Checks) == 0 {
		return ""
	}
	checks := slices.Clone(k.Checks)
	slices.SortStableFunc(checks, func(a, b model.KernelCheck) int {
		switch {
		case a.Judged == b.Judged:
			return 0
		case a.Judged:
			return -1
		}
		return 1
	})
	var parts []string
	for _, c := range checks {
		apart := ""
		if c.KernelSec > 0 {
			apart = fmt.Sprintf(", %.1f%% apart", math.Abs(c.Charged()-c.KernelSec)/c.KernelSec*100)
		}
		if c.Judged {
			apart += ", held to 5%"
		}
		what := c.What
		switch {
		case c.TID != 0:
			what += fmt.Sprintf(" of %d judged one by one", c.Threads)
		case c.Threads != checks[0].Threads:
			what += fmt.Sprintf(" (%d threads)", c.Threads)
		}
		parts = append(parts, fmt.Sprintf("%s %s here, %s by %s%s", what, Secs(c.Charged()), Secs(c.KernelSec), c.Source, apart))
	}
	line := fmt.Sprintf("against the kernel (%d threads): %s", checks[0].Threads, strings.Join(parts, "; "))
	// What rounds to 0ms is not said.
	var less []string
	if u := checks[0].UnchargedSec; u >= 0.0005 {
		less = append(less, Secs(u)+" of steal or interrupt time")
	}
	if l := checks[0].CutLagSec; l >= 0.0005 {
		less = append(less, Secs(l)+" after the kernel had ended runs that blocked (it ends a run before it picks the next task)")
	}
	if len(less) > 0 {
		line += "; perfsleuth's cpu is taken here as the kernel charges it, less " + strings.Join(less, " and ")
	}
	if !checks[len(checks)-1].Judged {
		line += " (the others shown, not judged: docs/figures.md says why)"
	}
	return line
}

// CriticalPathSec is the critical path's time; 0 without one.
func CriticalPathSec(ta *model.TimeAccounting) float64 {
	sum := 0.0
	for _, c := range slices.Sorted(maps.Keys(ta.CriticalPath)) {
		sum += ta.CriticalPath[c]
	}
	return sum
}

// CriticalPath is the critical path's line: its categories by share, most
// first, and the pollers left out; "" without one.
func CriticalPath(ta *model.TimeAccounting) string {
	sum := CriticalPathSec(ta)
	if sum <= 0 {
		return ""
	}
	var cats []Cat
	for c, s := range ta.CriticalPath {
		if s/sum >= 0.005 {
			cats = append(cats, Cat{c, s, s / sum})
		}
	}
	sort.Slice(cats, func(i, j int) bool {
		if cats[i].Sec != cats[j].Sec {
			return cats[i].Sec > cats[j].Sec
		}
		return cats[i].Name < cats[j].Name
	})
	var parts []string
	for _, c := range cats {
		parts = append(parts, fmt.Sprintf("%s %.0f%%", c.Name, c.Share*100))
	}
	line := "critical path: " + strings.Join(parts, ", ") + " (each wait for another thread of the workload charged to what that thread was doing"
	var left []string
	for _, t := range ta.Threads {
		if t.Poller {
			left = append(left, fmt.Sprintf("%s %d", t.Comm, t.TID))
		}
	}
	if len(left) > 0 {
		line += "; left out, asleep on timers or waiting the whole window while others worked: " + strings.Join(left, ", ")
	}
	return line + ")"
}

// WaitRow is one busy thread's waits: off the CPU, by what ended them.
type WaitRow struct {
	PID, TID int
	Name     string
	// WaitedSec is its time off the CPU (run-queue waits excluded); By
	// the wakers, most time first, each with its share of WaitedSec.
	WaitedSec float64
	By        []Cat
}

// Waits lists what ended the busy threads' waits (the wait-for graph),
// threads that waited longest first, at most n; wakers under 1% are left
// out of By.
func Waits(ta *model.TimeAccounting, n int) List[WaitRow] {
	if ta.Waits == nil {
		return List[WaitRow]{}
	}
	skip := map[int]bool{}
	comm := map[int]string{}
	for _, t := range ta.Threads {
		if t.Idle {
			skip[t.TID] = true
		}
		comm[t.TID] = t.Comm
	}
	rows := map[int]*WaitRow{}
	by := map[int]map[string]float64{}
	for _, w := range ta.Waits {
		if w.Category == model.CatCPUWait || skip[w.TID] || w.Seconds <= 0 {
			continue
		}
		r := rows[w.TID]
		if r == nil {
			name := comm[w.TID]
			if name == "" {
				name = "exited"
			}
			r = &WaitRow{PID: w.PID, TID: w.TID, Name: name}
			rows[w.TID] = r
			by[w.TID] = map[string]float64{}
		}
		r.WaitedSec += w.Seconds
		by[w.TID][WakerWords(w)] += w.Seconds
	}
	var all []WaitRow
	for tid, r := range rows {
		for k, s := range by[tid] {
			if r.WaitedSec > 0 && s/r.WaitedSec >= 0.01 {
				r.By = append(r.By, Cat{k, s, s / r.WaitedSec})
			}
		}
		sort.Slice(r.By, func(i, j int) bool {
			if r.By[i].Sec != r.By[j].Sec {
				return r.By[i].Sec > r.By[j].Sec
			}
			return r.By[i].Name < r.By[j].Name
		})
		all = append(all, *r)
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].WaitedSec != all[j].WaitedSec {
			return all[i].WaitedSec > all[j].WaitedSec
		}
		return all[i].TID < all[j].TID
	})
	return first(all, n)
}

// WakerWords names what ended a wait, in a few words: "the disk (read)",
// "timer", "peer fio 1234", "kernel thread jbd2/vda1-8", "outside: sshd
// 99 (pid 98)", "softirq net_rx", "irq 24", "not ended".
func WakerWords(w model.Wait) string {
	switch w.Waker {
	case model.WakerDevice:
		return "the disk (" + w.Op + ")"
	case model.WakerTimer:
		return "timer"
	case model.WakerPeer:
		if w.WakerTID == 0 && w.WakerPID != 0 {
			return "process " + model.OrNum(w.WakerComm, w.WakerPID) // a run-queue wait's: what had the CPU
		}
		if w.WakerTID == 0 {
			return "a thread of the workload, since gone"
		}
		if w.WakerComm == "" {
			return fmt.Sprintf("thread %d", w.WakerTID)
		}
		return fmt.Sprintf("%s %d", w.WakerComm, w.WakerTID)
	case model.WakerKthread:
		return "kernel thread " + model.OrNum(w.WakerComm, w.WakerTID)
	case model.WakerOutside:
		// The process, which -p takes to observe it with the workload.
		if w.WakerTID == 0 && w.WakerPID != 0 {
			return "outside: process " + model.OrNum(w.WakerComm, w.WakerPID)
		}
		if w.WakerPID != 0 {
			return fmt.Sprintf("outside: %s (pid %d)", model.OrNum(w.WakerComm, w.WakerTID), w.WakerPID)
		}
		return "outside: " + model.OrNum(w.WakerComm, w.WakerTID)
	case model.WakerSoftirq:
		return "softirq " + w.Softirq
	case model.WakerIRQ:
		if w.IRQ == 0 {
			return "an interrupt"
		}
		return fmt.Sprintf("irq %d", w.IRQ)
	}
	return "not ended in the window"
}

// MatrixRow is one activity's time by state, summed over the busy
// threads, and its time on the critical path.
type MatrixRow struct {
	Activity    string
	Seconds     map[string]float64
	TotalSec    float64
	CriticalSec float64
}

// Matrix is the busy threads' time by activity (what they were doing: the
// syscall class they were in, user code, a page fault) and state (how:
// on a CPU, waiting for one, blocked on storage or a lock, asleep until a
// peer, a timer or anything else woke it).
type Matrix struct {
	// Rows, the activities with the most time first.
	Rows []MatrixRow
	// States are the states that have time, in model order.
	States []string
	// TotalSec is the busy threads' time, PathSec the critical path's
	// (0 without one).
	TotalSec, PathSec float64
	// Unsampled: some cpu time is not split by activity (the record has
	// no on-CPU samples, or no sample fell on a thread).
	Unsampled bool
}

// MatrixOf is the record's time by activity and state; no rows without it
// Legend is what both renderers say under the matrix after their own
// words for its cells: what its states peer, timer and other mean, and
// what unsampled is when the matrix has it.
func (m Matrix) Legend() string {
	s := "peer, timer, other: asleep until a thread of the workload, a timer, or anything else woke it (or nothing did)"
	if m.Unsampled {
		s += "; unsampled: cpu time no on-CPU sample split by activity"
	}
	return s
}

// (no wait-for graph).
func MatrixOf(ta *model.TimeAccounting) Matrix {
	var m Matrix
	by := map[string]*MatrixRow{}
	used := map[string]bool{}
	var order []string
	for _, c := range ta.Matrix {
		r := by[c.Activity]
		if r == nil {
			r = &MatrixRow{Activity: c.Activity, Seconds: map[string]float64{}}
			by[c.Activity] = r
			order = append(order, c.Activity)
		}
		r.Seconds[c.State] += c.Seconds
		r.TotalSec += c.Seconds
		r.CriticalSec += c.CriticalSec
		m.TotalSec += c.Seconds
		m.PathSec += c.CriticalSec
		if c.Seconds > 0 {
			used[c.State] = true
		}
		if c.Activity == model.ActivityUnsampled && c.State == model.StateCPU && c.Seconds > 0 {
			m.Unsampled = true
		}
	}
	for _, st := range model.States {
		if used[st] {
			m.States = append(m.States, st)
		}
	}
	// The record's order is most time first already; kept stable for
	// records analysed by other versions.
	for _, a := range order {
		m.Rows = append(m.Rows, *by[a])
	}
	sort.SliceStable(m.Rows, func(i, j int) bool { return m.Rows[i].TotalSec > m.Rows[j].TotalSec })
	return m
}

// LockRow is one lock the workload's threads waited on: what it is, its
// share of all the lock waits, and where the waiters and the holder were.
type LockRow struct {
	Lock, Activity string
	Seconds, Share float64
	Count, Walked  int64
	Waiters        string // the waiters' innermost user frames, "a <- b"
	Holder         string // where the holder let go
}

// Locks lists the locks waited on, most time first, at most n.
func Locks(ta *model.TimeAccounting, n int) List[LockRow] {
	total := 0.0
	for _, w := range ta.Locks {
		total += w.Seconds
	}
	if total <= 0 {
		return List[LockRow]{}
	}
	frames := func(f []string) string { return strings.Join(f[:min(2, len(f))], " <- ") }
	var out []LockRow
	for _, w := range ta.Locks {
		out = append(out, LockRow{Lock: w.Lock, Activity: w.Activity, Seconds: w.Seconds, Share: w.Seconds / total,
			Count: w.Count, Walked: w.Walked, Waiters: frames(w.User), Holder: frames(w.Holder)})
	}
	return first(out, n)
}

// ThreadName is how the views name a thread: its process's title when it
// set one (PostgreSQL's "postgres: walwriter", a Python script's name),
// with the thread's own comm when that says more ("postgres: walwriter"
// for its main thread, "app.py/worker-1" for a named thread of app.py);
// otherwise its comm.
func ThreadName(comm, title string) string {
	switch {
	case title == "" || title == comm:
		return comm
	case strings.HasPrefix(title, comm) || strings.HasPrefix(comm, title) || procName(comm, title):
		return title
	}
	return title + "/" + comm
}

// procName says whether comm is the process's own name (its main thread's
// comm, which the kernel cuts to 15 bytes): the interpreter of a script
// title, or the program a title begins with ("postgres" of "postgres:
// walwriter").
func procName(comm, title string) bool {
	if i := strings.IndexAny(title, ": "); i > 0 && strings.HasPrefix(comm, title[:i]) {
		return true
	}
	return proctree.Interpreter(comm)
}

// RoleRow is the busy threads of one role together.
type RoleRow struct {
	Name    string
	Threads int
	WallSec float64
	// Largest are the categories with time, most first, each with its
	// share of WallSec.
	Largest []Cat
}

// ProgramShare is one program's part of the busy threads' CPU time.
type ProgramShare struct {
	model.ProgramCPU
	// CPUShare is its share of all the busy threads' time on a CPU.
	CPUShare float64
}

// Roles groups the busy threads by role (proctree.Role), most wall time first,
// when some role has two threads or more (a server's backends, a pool's
// workers); nil otherwise. Programs gives each program's share of the CPU
// time when the workload ran more than one (a server and its client).
func Roles(ta *model.TimeAccounting) (roles []RoleRow, programs []ProgramShare) {
	at := map[string]int{}
	secs := map[string]map[string]float64{}
	several := false
	progs := ta.ProgramNames()
	for _, t := range ta.Threads {
		if t.Idle {
			continue
		}
		r := proctree.Role(t.Comm, t.Title, progs[t.PID])
		i, ok := at[r]
		if !ok {
			i = len(roles)
			at[r] = i
			roles = append(roles, RoleRow{Name: r})
			secs[r] = map[string]float64{}
		}
		roles[i].Threads += max(t.Folded, 1)
		roles[i].WallSec += t.WallSec
		several = several || roles[i].Threads > 1
		for c, s := range t.Seconds {
			secs[r][c] += s
		}
	}
	if !several || len(roles) < 2 {
		roles = nil // one role: the threads' own rows say it all
	}
	for i := range roles {
		r := &roles[i]
		for c, s := range secs[r.Name] {
			if s > 0 && r.WallSec > 0 {
				r.Largest = append(r.Largest, Cat{c, s, s / r.WallSec})
			}
		}
		slices.SortFunc(r.Largest, func(a, b Cat) int { return cmp.Or(cmp.Compare(b.Sec, a.Sec), strings.Compare(a.Name, b.Name)) })
	}
	slices.SortStableFunc(roles, func(a, b RoleRow) int { return cmp.Compare(b.WallSec, a.WallSec) })
	if cpu := ta.ProgramsCPU(); len(cpu) >= 2 {
		total := 0.0
		for _, p := range cpu {
			total += p.CPUSec
		}
		for _, p := range cpu {
			share := 0.0
			if total > 0 {
				share = p.CPUSec / total
			}
			programs = append(programs, ProgramShare{p, share})
		}
	}
	return roles, programs
}

// droppedWords say what each kind of dropped event lost
// (model.TimeAccounting.DroppedBy), in the order they are listed.
var droppedWords = []struct{ key, words string }{
	{model.DroppedThreads, "of threads or processes the probe's maps could not hold (their time is missing)"},
	{model.DroppedWaits, "waits the wait-for graph could not hold (their time is in the categories, not in the waits)"},
	{model.DroppedSyscalls, "syscalls not counted"},
	{model.DroppedSyncedFiles, "sync calls whose file could not be listed"},
}

// DroppedOf warns that the accounting dropped events, and says what they
// were when the record splits them.
func DroppedOf(ta *model.TimeAccounting) string {
	var parts []string
	for _, w := range droppedWords {
		if n := ta.DroppedBy[w.key]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", units.FormatCount(n), w.words))
		}
	}
	s := fmt.Sprintf("%s events were dropped: the accounting is incomplete", units.FormatCount(ta.Dropped))
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, "; ") + ")"
	}
	return s
}
