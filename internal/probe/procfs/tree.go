package procfs

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"

	promfs "github.com/prometheus/procfs"
	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/proctree"
)

// userHZ is the unit of every time in /proc/PID/stat. It is 100 on every
// architecture Go supports (procfs makes the same assumption).
const userHZ = 100

type thread struct {
	tid   int
	start uint64
	comm  string
	// base is the value at window start (zero for a thread born in the
	// window); the others are the latest read. runDelay is in ns.
	baseUser, baseSys, baseVol, baseInvol, baseBlkio, baseRunDelay uint64
	user, sys, vol, invol, blkio, runDelay                         uint64
	baseIO, io                                                     ioCounters
	// sched and hasIO say that schedstat and io were read at the thread's
	// first sample, so that its base is right; a later failed read keeps
	// the previous value, which the next good read catches up on.
	sched, hasIO bool
	alive        bool
	seenRound    int
}

type proc struct {
	pid, ppid int
	start     uint64
	root      bool
	// included is false for a root that is only a launcher: its own time
	// and threads are not the workload's, its reaped children's are.
	included bool
	// prev is the previous read (or the baseline), last the latest.
	prev, last counters
	pending    credit
	threads    map[int]*thread
	oldThreads []*thread // threads whose TID was reused
	seenRound  int       // the last round that read it
	// title is its title (Title), as last read.
	title string
}

// tree follows the workload's process tree across snapshots and turns
// cumulative counters into per-interval deltas (see the package comment for
// the accounting scheme).
type tree struct {
	procRoot string
	rootPID  int
	// others are more roots, whose trees are followed as the root's (the
	// server observed with a client command).
	others      []int
	includeRoot bool
	startTicks  uint64 // window start, clock ticks after boot
	// schedstat: read each thread's schedstat (the kernel keeps it);
	// threadIO: read each thread's io (delay accounting is on, and its
	// block-IO delay is only worth splitting then). final: this update
	// ends the window, so every thread is read in full.
	schedstat, threadIO, final bool
	fs                         promfs.FS
	r                          *reader

	round   int
	procs   map[int]*proc
	gone    []*proc      // exited, kept for the per-thread totals
	outside map[int]bool // listed PIDs known not to be in the tree
	warn    func(string)

	// scratch, reused every round
	listed   []int
	present  map[int]bool
	newPIDs  map[int]int // pid -> ppid for PIDs first listed this round
	newStart map[int]uint64
	order    []*proc
	tids     []int
}

func newTree(procRoot string, rootPID int, others []int, includeRoot bool, r *reader, warn func(string)) (*tree, error) {
	fs, err := promfs.NewFS(procRoot)
	if err != nil {
		return nil, fmt.Errorf("procfs at %s: %w", procRoot, err)
	}
	return &tree{
		procRoot: procRoot, rootPID: rootPID, others: others, includeRoot: includeRoot, fs: fs, r: r,
		procs: map[int]*proc{}, outside: map[int]bool{}, warn: warn,
		present: map[int]bool{}, newPIDs: map[int]int{}, newStart: map[int]uint64{},
	}, nil
}

// update reads the tree once and returns the change since the previous
// update (zero on the first). first marks the window-start snapshot.
func (t *tree) update() (model.ProcessUse, error) {
	t.round++
	first := t.round == 1
	if err := t.discover(first); err != nil {
		return model.ProcessUse{}, err
	}
	var use model.ProcessUse
	var reaped []*proc
	for _, p := range t.readOrder() {
		if !t.readProc(p, first, &use) {
			reaped = append(reaped, p)
		}
	}
	// Hand each vanished process's credited totals to the nearest living
	// tracked ancestor, whose cutime/cstime/io will (or already did) grow by
	// its final totals.
	for _, d := range reaped {
		if a := t.reaper(d); a != nil {
			a.pending.user += d.last.utime + d.last.cutime
			a.pending.sys += d.last.stime + d.last.cstime
			a.pending.io = addIO(a.pending.io, d.last.io)
		}
	}
	for _, d := range reaped {
		for _, th := range d.threads {
			th.alive = false
		}
		delete(t.procs, d.pid)
		t.gone = append(t.gone, d)
	}
	for _, p := range t.procs {
		if p.seenRound == t.round {
			t.credit(p, &use)
		}
	}
	if first {
		use = model.ProcessUse{Processes: use.Processes, Threads: use.Threads}
	}
	return use, nil
}

// discover lists /proc and adds new descendants to the tree. A PID listed in
// the previous round and known to be outside is not read again: a process's
// parent is fixed at fork, so only new PIDs can join.
func (t *tree) discover(first bool) error {
	t.listed = t.listed[:0]
	err := t.r.numericEntries(t.procRoot, func(pid int) { t.listed = append(t.listed, pid) })
	if err != nil {
		return fmt.Errorf("list %s: %w", t.procRoot, err)
	}
	clear(t.newPIDs)
	clear(t.newStart)
	clear(t.present)
	for _, pid := range t.listed {
		t.present[pid] = true
		if t.procs[pid] != nil || t.outside[pid] {
			continue
		}
		b, err := t.r.readFile(t.r.join(t.procRoot, pid, "stat"))
		if err != nil {
			continue // exited since the listing
		}
		st, err := parseStat(b)
		if err != nil {
			continue
		}
		t.newPIDs[pid] = st.ppid
		t.newStart[pid] = st.start
	}
	for pid := range t.outside {
		if !t.present[pid] {
			delete(t.outside, pid)
		}
	}
	if first {
		if _, ok := t.newPIDs[t.rootPID]; !ok {
			return fmt.Errorf("pid %d: %w", t.rootPID, fs.ErrNotExist)
		}
		t.procs[t.rootPID] = &proc{pid: t.rootPID, root: true, included: t.includeRoot, start: t.newStart[t.rootPID], threads: map[int]*thread{}}
		delete(t.newPIDs, t.rootPID)
		for _, pid := range t.others {
			if _, ok := t.newPIDs[pid]; !ok {
				return fmt.Errorf("pid %d: %w", pid, fs.ErrNotExist)
			}
			t.procs[pid] = &proc{pid: pid, root: true, included: true, start: t.newStart[pid], threads: map[int]*thread{}}
			delete(t.newPIDs, pid)
		}
	}
	// Join new PIDs whose parent is in the tree, until nothing changes
	// (a child and its grandchild can both be new).
	for changed := true; changed; {
		changed = false
		for pid, ppid := range t.newPIDs {
			if t.procs[ppid] != nil {
				t.procs[pid] = &proc{pid: pid, ppid: ppid, start: t.newStart[pid], included: true, threads: map[int]*thread{}}
				delete(t.newPIDs, pid)
				changed = true
			}
		}
	}
	for pid := range t.newPIDs {
		t.outside[pid] = true
	}
	return nil
}

// readOrder lists tracked processes parents first, so a parent's stat is
// read before its children's: a child reaped between the two reads is then
// missing from the child's read and present in the parent's next one, which
// the pending scheme handles; the other order would count it twice.
func (t *tree) readOrder() []*proc {
	t.order = t.order[:0]
	children := map[int][]*proc{}
	for _, p := range t.procs {
		if !p.root {
			children[p.ppid] = append(children[p.ppid], p)
		}
	}
	seen := map[*proc]bool{}
	var walk func(p *proc)
	walk = func(p *proc) {
		if seen[p] {
			return
		}
		seen[p] = true
		t.order = append(t.order, p)
		kids := children[p.pid]
		sort.Slice(kids, func(i, j int) bool { return kids[i].pid < kids[j].pid })
		for _, c := range kids {
			walk(c)
		}
	}
	for _, pid := range append([]int{t.rootPID}, t.others...) {
		if r := t.procs[pid]; r != nil && r.root {
			walk(r)
		}
	}
	// Orphans re-parented outside the tree (to init or a subreaper).
	rest := make([]*proc, 0)
	for _, p := range t.procs {
		if !seen[p] {
			rest = append(rest, p)
		}
	}
	sort.Slice(rest, func(i, j int) bool { return rest[i].pid < rest[j].pid })
	for _, p := range rest {
		walk(p)
	}
	return t.order
}

// readProc reads one process and its threads. It returns false when the
// process is gone (or its PID now belongs to another process).
func (t *tree) readProc(p *proc, first bool, use *model.ProcessUse) bool {
	b, err := t.r.readFile(t.r.join(t.procRoot, p.pid, "stat"))
	if err != nil {
		return false
	}
	st, err := parseStat(b)
	if err != nil || st.start != p.start {
		return false
	}
	fresh := p.seenRound == 0
	p.ppid = st.ppid
	now := counters{utime: st.utime, stime: st.stime, cutime: st.cutime, cstime: st.cstime, io: p.last.io}
	if pio, err := t.readIO(p.pid); err == nil {
		now.io = pio
	}
	switch {
	case !fresh:
		p.prev = p.last
	case first || t.bornBefore(p.start):
		p.prev = now // there at window start: only later changes count
	default:
		p.prev = counters{} // born in the window: all it counted is ours
	}
	p.last, p.seenRound = now, t.round
	if p.included {
		use.Processes++
		t.readThreads(p, first, use)
		if b, err := t.r.readFile(t.r.join(t.procRoot, p.pid, "cmdline")); err == nil {
			if title := proctree.Title(b); title != "" {
				p.title = title
			}
		}
	}
	return true
}

// credit adds one living process's change since its previous read.
func (t *tree) credit(p *proc, use *model.ProcessUse) {
	dUser := sat(p.last.utime, p.prev.utime)
	dSys := sat(p.last.stime, p.prev.stime)
	dCUser := sat(p.last.cutime, p.prev.cutime)
	dCSys := sat(p.last.cstime, p.prev.cstime)
	dIO := subIO(p.last.io, p.prev.io)
	reaped := dCUser+dCSys > 0 || p.pending.user+p.pending.sys > 0
	cUser := take(&p.pending.user, dCUser)
	cSys := take(&p.pending.sys, dCSys)
	cIO := takeIO(&p.pending.io, dIO)
	if p.included {
		cUser += dUser
		cSys += dSys
	} else if !reaped {
		// A launcher's own IO cannot be told apart from its reaped
		// children's; count it only in intervals where it reaped one.
		cIO = ioCounters{}
	}
	use.UserSec += float64(cUser) / userHZ
	use.SystemSec += float64(cSys) / userHZ
	use.RChar += int64(cIO.rchar)
	use.WChar += int64(cIO.wchar)
	use.SyscR += int64(cIO.syscr)
	use.SyscW += int64(cIO.syscw)
	use.ReadBytes += int64(cIO.readBytes)
	use.WriteBytes += int64(cIO.writeBytes)
	use.CancelledWriteBytes += int64(cIO.cancelled)
}

// reaper is the nearest tracked ancestor of a vanished process that is still
// alive: the one whose cutime/cstime/io received its final totals.
func (t *tree) reaper(d *proc) *proc {
	seen := map[int]bool{}
	for pid := d.ppid; !seen[pid]; {
		seen[pid] = true
		a := t.procs[pid]
		if a == nil {
			return nil // reaped by init or a process outside the tree
		}
		if a.seenRound == t.round {
			return a
		}
		pid = a.ppid // the parent vanished too: its reaper got both
	}
	return nil
}

// readThreads reads every thread of p; thread-level counters (context
// switches, run-queue wait, block-IO delay and, with delay accounting on,
// the thread's own block-IO counts) exist only per thread.
func (t *tree) readThreads(p *proc, first bool, use *model.ProcessUse) {
	tids := t.tids[:0]
	err := t.r.numericEntries(t.r.join(t.procRoot, p.pid, "task"), func(tid int) { tids = append(tids, tid) })
	t.tids = tids
	if err != nil {
		return // gone since its stat was read; the next round sees it
	}
	for _, tid := range tids {
		b, err := t.r.readFile(t.r.join(t.procRoot, p.pid, "task", tid, "stat"))
		if err != nil {
			continue
		}
		st, err := parseStat(b)
		if err != nil {
			continue
		}
		th := p.threads[tid]
		if th != nil && th.start != st.start {
			th.alive = false
			p.oldThreads = append(p.oldThreads, th)
			th = nil
		}
		fresh := th == nil
		if fresh {
			th = &thread{tid: tid, start: st.start, comm: string(st.comm)}
			p.threads[tid] = th
		} else if string(st.comm) != th.comm { // renamed (prctl PR_SET_NAME)
			th.comm = string(st.comm)
		}
		prevUser, prevSys, prevVol, prevInvol, prevBlkio, prevRunDelay := th.user, th.sys, th.vol, th.invol, th.blkio, th.runDelay
		th.user, th.sys, th.blkio = st.utime, st.stime, st.blkio
		if sb, err := t.r.readFile(t.r.join(t.procRoot, p.pid, "task", tid, "status")); err == nil {
			if v, iv, ok := parseCtxSwitches(sb); ok {
				th.vol, th.invol = v, iv
			}
		}
		// schedstat and io are skipped for a thread that has neither run a
		// tick nor been switched out since its last read; a later read
		// catches up (see "Run-queue wait and block-IO delay" in the
		// package comment).
		still := !fresh && !t.final && th.user == prevUser && th.sys == prevSys && th.vol == prevVol && th.invol == prevInvol
		var schedOK, ioOK bool
		if !still {
			schedOK, ioOK = t.readThreadSched(p.pid, th), t.readThreadIO(p.pid, th)
		}
		if fresh {
			th.sched, th.hasIO = schedOK, ioOK
			if first || t.bornBefore(st.start) {
				th.baseUser, th.baseSys, th.baseVol, th.baseInvol, th.baseBlkio = th.user, th.sys, th.vol, th.invol, th.blkio
				th.baseRunDelay, th.baseIO = th.runDelay, th.io
			}
			prevVol, prevInvol, prevBlkio, prevRunDelay = th.baseVol, th.baseInvol, th.baseBlkio, th.baseRunDelay
		}
		use.VolCtxSw += int64(sat(th.vol, prevVol))
		use.InvolCtxSw += int64(sat(th.invol, prevInvol))
		use.IODelaySec += float64(sat(th.blkio, prevBlkio)) / userHZ
		if th.sched {
			use.RunDelaySec += float64(sat(th.runDelay, prevRunDelay)) / 1e9
		}
		th.alive, th.seenRound = true, t.round
	}
	for _, th := range p.threads {
		if th.seenRound != t.round {
			th.alive = false
		} else {
			use.Threads++
		}
	}
}

// readThreadSched reads a thread's run-queue wait from its schedstat, when
// the kernel keeps one; one more small file per thread (~7 µs here).
func (t *tree) readThreadSched(pid int, th *thread) bool {
	if !t.schedstat {
		return false
	}
	b, err := t.r.readFile(t.r.join(t.procRoot, pid, "task", th.tid, "schedstat"))
	if err != nil {
		return false
	}
	_, run, ok := parseSchedstat(b)
	if ok {
		th.runDelay = run
	}
	return ok
}

// readThreadIO reads a thread's block-IO byte counts, only while delay
// accounting is on: they tell what its block-IO delay waited for, and
// without that delay they would cost a file read per thread for nothing.
func (t *tree) readThreadIO(pid int, th *thread) bool {
	if !t.threadIO {
		return false
	}
	b, err := t.r.readFile(t.r.join(t.procRoot, pid, "task", th.tid, "io"))
	if err != nil {
		return false
	}
	c, ok := parseBlockIO(b)
	if ok {
		th.io = c
	}
	return ok
}

// bornBefore says whether a start time is before the window began (with a
// tick of slack for the clock-tick rounding of both).
func (t *tree) bornBefore(start uint64) bool { return start+1 < t.startTicks }

func (t *tree) readIO(pid int) (ioCounters, error) {
	pr, err := t.fs.Proc(pid)
	if err != nil {
		return ioCounters{}, err
	}
	pio, err := pr.IO()
	if err != nil {
		if errors.Is(err, unix.EACCES) || errors.Is(err, fs.ErrPermission) {
			t.warn(fmt.Sprintf("/proc/%d/io is not readable (not root?): IO counts of the workload are missing; run as root or as the workload's user", pid))
		}
		return ioCounters{}, err
	}
	return ioCounters{pio.RChar, pio.WChar, pio.SyscR, pio.SyscW, pio.ReadBytes, pio.WriteBytes, uint64(max(pio.CancelledWriteBytes, 0))}, nil
}

// threadUses lists every thread of the included processes seen in the
// window, with its change from window start (or birth) to its last read.
func (t *tree) threadUses() []model.ThreadUse {
	var out []model.ThreadUse
	add := func(p *proc, th *thread) {
		u := model.ThreadUse{
			PID: p.pid, TID: th.tid, Comm: th.comm, Title: p.title,
			UserSec:    float64(sat(th.user, th.baseUser)) / userHZ,
			SystemSec:  float64(sat(th.sys, th.baseSys)) / userHZ,
			VolCtxSw:   int64(sat(th.vol, th.baseVol)),
			InvolCtxSw: int64(sat(th.invol, th.baseInvol)),
			IODelaySec: float64(sat(th.blkio, th.baseBlkio)) / userHZ,
			SchedStat:  th.sched,
			Exited:     !th.alive,
		}
		if th.sched {
			u.RunDelaySec = float64(sat(th.runDelay, th.baseRunDelay)) / 1e9
		}
		if th.hasIO {
			d := subIO(th.io, th.baseIO)
			u.IO = &model.ThreadIO{ReadBytes: int64(d.readBytes), WriteBytes: int64(d.writeBytes), CancelledWriteBytes: int64(d.cancelled)}
		}
		out = append(out, u)
	}
	each := func(p *proc) {
		if !p.included || p.seenRound == 0 {
			return
		}
		for _, th := range p.threads {
			add(p, th)
		}
		for _, th := range p.oldThreads {
			add(p, th)
		}
	}
	for _, p := range t.procs {
		each(p)
	}
	for _, p := range t.gone {
		each(p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].PID != out[j].PID {
			return out[i].PID < out[j].PID
		}
		return out[i].TID < out[j].TID
	})
	return out
}

// processesSeen counts the included processes seen in the window.
func (t *tree) processesSeen() int {
	n := 0
	for _, p := range t.procs {
		if p.included && p.seenRound > 0 {
			n++
		}
	}
	for _, p := range t.gone {
		if p.included && p.seenRound > 0 {
			n++
		}
	}
	return n
}
