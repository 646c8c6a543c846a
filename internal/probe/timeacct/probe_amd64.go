//go:build amd64

package timeacct

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/probe"
	"github.com/perfsleuth/perfsleuth/internal/proctree"
	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
)

// objects are the probe's maps, variables and always-attached programs; the
// optional programs (sync, syscalls) stay in Probe.coll.
type objects struct {
	timeacctMaps
	timeacctVariables
	HandleExit      *ebpf.Program `ebpf:"handle_exit"`
	HandleFree      *ebpf.Program `ebpf:"handle_free"`
	HandleFork      *ebpf.Program `ebpf:"handle_fork"`
	HandleSwitch    *ebpf.Program `ebpf:"handle_switch"`
	HandleWakeupNew *ebpf.Program `ebpf:"handle_wakeup_new"`
	HandleWaking    *ebpf.Program `ebpf:"handle_waking"`
	Seed            *ebpf.Program `ebpf:"seed"`
}

func (o *objects) programs() []*ebpf.Program {
	return []*ebpf.Program{o.HandleExit, o.HandleFree, o.HandleFork, o.HandleSwitch, o.HandleWakeupNew, o.HandleWaking, o.Seed}
}

// Probe is an attached timeacct probe. Stop it to read the result.
type Probe struct {
	cfg     Config
	coll    *ebpf.Collection // what objects did not take: .bss, optional programs
	objs    objects
	execs   bool // handle_exec attached: ProcEvents has the execs too
	links   []link.Link
	startNs uint64
	// tickEvery is tick_stack_every: the stacks are walked at one in
	// that many of the workload's ticks on a CPU.
	tickEvery uint32
	// endNs is when the window closed (CloseWindow), 0 while it is open;
	// closeErr why setting the flag failed.
	endNs    uint64
	closeErr error
	// compactor takes the edges of threads gone out of the edges map.
	compactor edgeCompactor
	loaded    bool
	syncNote  string
	// progs maps TA_PROG_* to the program, for calibration; ctxProgs are
	// ProgCtx's programs.
	progs    [NumPrograms]*ebpf.Program
	ctxProgs []*ebpf.Program
	ctxNote  string
	// enqueueNote says why the cut lag (from a run queue's clock update
	// to the switch) is not timed (handle_enqueue anchors the clocks),
	// when it is not.
	enqueueNote string
	// sampleNote says why the threads' cpu time is not split by activity
	// (ProgSample, at the scheduler tick), when it is not.
	sampleNote string
	// ranges are the kernel functions that classify a D-state wait,
	// read from /proc/kallsyms before load (with the tick's function).
	ranges []symRange
	// tracked is the map tracked, mapped here to add the roots.
	tracked *probe.TrackedSet
	// slots is the map threads, mapped here to read the entries.
	slots *probe.Slots
}

// syncHooks are the ext4 fsync tracepoints the sync detail needs.
var syncHooks = []string{"ext4_sync_file_enter", "ext4_sync_file_exit"}

// Start loads and attaches the probe for the trees rooted at cfg.Roots.
// The threads that exist at Start are seeded with their current state.
func Start(cfg Config) (_ *Probe, err error) {
	if len(cfg.Roots) == 0 {
		return nil, errors.New("timeacct: no process to observe")
	}
	for _, pid := range cfg.Roots {
		if pid <= 0 {
			return nil, fmt.Errorf("timeacct: bad root pid %d", pid)
		}
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err != nil {
			return nil, fmt.Errorf("timeacct: root pid %d: %w", pid, err)
		}
	}
	return start(cfg)
}

// start is Start without the checks of the root: calibration starts the
// probe with no roots, tracking nothing.
func start(cfg Config) (_ *Probe, err error) {
	p := &Probe{cfg: cfg}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	spec, err := loadTimeacct()
	if err != nil {
		return nil, fmt.Errorf("timeacct: %w", err)
	}
	if err := spec.Variables["want_stacks"].Set(cfg.Stacks); err != nil {
		return nil, fmt.Errorf("timeacct: %w", err)
	}
	if !cfg.Stacks {
		spec.Maps["stacks"].MaxEntries = 1
		spec.Maps["offcpu"].MaxEntries = 1
	}
	if cfg.aggEntries > 0 {
		spec.Maps["exited_agg"].MaxEntries = cfg.aggEntries
	}
	probe.SizeThreadIndex(spec, nil)
	if !cfg.Syscalls {
		delete(spec.Programs, "sys_enter")
		delete(spec.Programs, "sys_exit")
		spec.Maps["sys_stats"].MaxEntries = 1
	}
	if missing := probe.MissingTracepoints(syncHooks, " (ext4 not built in, or another filesystem)"); missing != "" {
		delete(spec.Programs, "ext4_sync_enter")
		delete(spec.Programs, "ext4_sync_exit")
		p.syncNote = "sync calls are not timed: " + missing + "; their time is still in storage-sync"
	}
	if missing := probe.MissingTracepoints([]string{"sched_update_nr_running_tp"}, ""); missing != "" {
		delete(spec.Programs, "handle_enqueue")
		p.enqueueNote = "a woken thread's run-queue wait is read from its run queue's clock, without the microseconds from the clock's update to the switch (" + missing + ")"
	}
	ncpu, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, fmt.Errorf("timeacct: %w", err)
	}
	spec.Maps["rq_enq"].MaxEntries = uint32(ncpu)
	ctxNames := slices.Sorted(maps.Values(ctxHooks))
	if missing := probe.MissingTracepoints(ctxNames, ""); missing != "" {
		for prog := range ctxHooks {
			delete(spec.Programs, prog)
		}
		p.ctxNote = "waits ended in an interrupt are not told apart (device, timer, other): " + missing
		p.sampleNote = "cpu time is not split by activity: " + missing
	}
	tick, err := p.readKallsyms()
	if err != nil {
		return nil, err
	}
	if tick == 0 && p.sampleNote == "" {
		p.sampleNote = "cpu time is not split by activity: the scheduler tick's function (" + strings.Join(tickFunctions, " or ") +
			") is not in /proc/kallsyms or its addresses are hidden (kernel.kptr_restrict)"
	}
	if err := spec.Variables["tick_fn"].Set(tick); err != nil {
		return nil, fmt.Errorf("timeacct: %w", err)
	}
	p.tickEvery = tickStackEvery(sysinfo.KernelHZ())
	if err := spec.Variables["tick_stack_every"].Set(p.tickEvery); err != nil {
		return nil, fmt.Errorf("timeacct: %w", err)
	}
	coll, err := probe.NewCollection("timeacct", spec, ebpf.CollectionOptions{})
	if err != nil {
		return nil, err
	}
	p.coll = coll
	if err := coll.Assign(&p.objs); err != nil {
		return nil, fmt.Errorf("load timeacct: %w", err)
	}
	p.loaded = true
	if p.slots, err = probe.MapSlots(p.objs.Threads, int(unsafe.Sizeof(timeacctTaThread{}))); err != nil {
		return nil, fmt.Errorf("timeacct: %w", err)
	}
	// The catch-all entry of sync_dirs (bpf/timeacct.h TA_FILE_DIR), which
	// the programs do not make.
	// The catch-all aggregate (tgid 0) of the threads of processes past
	// the ones exited_agg keeps apart (bpf/timeacct.bpf.c fold_exited).
	if err := p.objs.ExitedAgg.Put(uint32(0), timeacctTaAgg{}); err != nil {
		return nil, fmt.Errorf("timeacct: map exited_agg: %w", err)
	}
	if err := p.objs.SyncDirs.Put(timeacctTaFileKey{Pad: fileDir}, timeacctTaFile{}); err != nil {
		return nil, fmt.Errorf("timeacct: map sync_dirs: %w", err)
	}
	o := &p.objs
	// No sched_wakeup program: a sleep ends at the switch-in (woken).
	p.progs = [NumPrograms]*ebpf.Program{o.HandleSwitch, nil, o.HandleWakeupNew, o.HandleFork, o.HandleExit,
		coll.Programs["ext4_sync_enter"], coll.Programs["ext4_sync_exit"], coll.Programs["sys_enter"], coll.Programs["sys_exit"], nil, o.HandleWaking, nil, coll.Programs["handle_enqueue"]}

	if err := p.loadRanges(); err != nil {
		return nil, err
	}
	for _, pid := range cfg.Roots {
		if err := p.track(pid); err != nil {
			return nil, err
		}
	}

	p.startNs = probe.MonotonicNs()
	// The CPU-context markers first, so that the first wake-ups are told
	// apart, and the exits before the entries: an entry seen without its
	// exit would leave its CPU marked (every wake-up on it a timer's, in
	// one run here), where an exit without its entry clears what is clear.
	ctxOrder := slices.Sorted(maps.Keys(ctxHooks))
	slices.SortStableFunc(ctxOrder, func(a, b string) int {
		return cmp.Compare(b2i(strings.HasSuffix(a, "_entry")), b2i(strings.HasSuffix(b, "_entry")))
	})
	for _, name := range ctxOrder {
		prog := coll.Programs[name]
		if prog == nil {
			continue
		}
		l, err := link.AttachTracing(link.TracingOptions{Program: prog})
		if err != nil {
			return nil, fmt.Errorf("attach %s: %w", name, err)
		}
		p.links = append(p.links, l)
		p.ctxProgs = append(p.ctxProgs, prog)
	}
	// Fork first, so no process created while the others attach escapes.
	// The enqueues before the switches, which read their clocks (woken).
	for _, i := range []int{ProgFork, ProgExit, ProgWakeupNew, ProgEnqueue, ProgWaking, ProgSwitch, ProgSyncEnter, ProgSyncExit, ProgSysEnter, ProgSysExit} {
		if p.progs[i] == nil {
			continue
		}
		l, err := link.AttachTracing(link.TracingOptions{Program: p.progs[i]})
		if err != nil {
			return nil, fmt.Errorf("attach %s: %w", ProgramNames[i], err)
		}
		p.links = append(p.links, l)
	}
	// A process leaves tracked when its leader is freed (bpf/timeacct.bpf.c
	// handle_free): attached after the exits, so no exit of a tracked
	// process is seen after its entry went.
	l, err := link.AttachTracing(link.TracingOptions{Program: p.objs.HandleFree})
	if err != nil {
		return nil, fmt.Errorf("attach sched_process_free: %w", err)
	}
	p.links = append(p.links, l)
	// The execs, for ProcEvents: without them the mappings keeper looks
	// for new processes and execs itself.
	if prog := coll.Programs["handle_exec"]; prog != nil {
		if l, err := link.AttachTracing(link.TracingOptions{Program: prog}); err == nil {
			p.links = append(p.links, l)
			p.execs = true
		}
	}

	// Processes below the root at attach time. A process forked by one of
	// them before it was tracked is still in /proc on the next pass.
	seen := map[int]bool{}
	for pass := 0; len(cfg.Roots) > 0 && pass < 3; pass++ {
		pids, err := proctree.Below("/proc", cfg.Roots)
		if err != nil {
			return nil, err
		}
		added := 0
		for _, pid := range pids {
			if seen[pid] {
				continue
			}
			seen[pid] = true
			added++
			if err := p.track(pid); err != nil {
				return nil, err
			}
		}
		if added == 0 {
			break
		}
	}

	if err := p.seed(); err != nil {
		return nil, err
	}
	p.startCompactor()
	if !cfg.DeferWindow {
		if err := p.Open(); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Open opens the window: time counts from now.
func (p *Probe) Open() error {
	now := probe.MonotonicNs()
	if err := p.objs.WindowNs.Set(now); err != nil {
		return fmt.Errorf("timeacct: open the window: %w", err)
	}
	p.startNs = now
	return nil
}

func (p *Probe) track(pid int) error {
	if p.tracked == nil {
		set, err := probe.OpenTracked(p.objs.Tracked)
		if err != nil {
			return err
		}
		p.tracked = set
	}
	return p.tracked.Add(pid)
}

// readKallsyms reads, before load, the kernel functions whose presence on
// a sleeping task's stack tells what it waits for, and the scheduler
// tick's function (0 if not found). Without readable addresses the probe
// still works: D-state sleeps are then classified by syscall only, and
// the cpu time is not split by activity.
// They are read once per process (~100 ms each time: the kernel formats
// the whole file on every read), as a run starts the probe three times
// (two calibration phases, then the run) and diagnose once per run.
func (p *Probe) readKallsyms() (tick uint64, err error) {
	kallsyms.mu.Lock()
	defer kallsyms.mu.Unlock()
	if !kallsyms.read {
		f, err := os.Open("/proc/kallsyms")
		if err != nil {
			return 0, nil
		}
		defer f.Close()
		kallsyms.ranges, kallsyms.tick, err = parseKallsyms(f)
		if err != nil {
			return 0, err
		}
		kallsyms.read = true
	}
	p.ranges = kallsyms.ranges
	return kallsyms.tick, nil
}

// kallsyms is what readKallsyms found, kept for the process.
var kallsyms struct {
	mu     sync.Mutex
	read   bool
	ranges []symRange
	tick   uint64
}

// loadRanges fills the ranges map from what readKallsyms found.
func (p *Probe) loadRanges() error {
	var r timeacctTaRanges
	for i, s := range p.ranges {
		r.Start[i], r.End[i], r.Class[i] = s.start, s.end, uint32(s.class)
	}
	if err := p.objs.Ranges.Put(uint32(0), &r); err != nil {
		return fmt.Errorf("map ranges: %w", err)
	}
	return nil
}

// seed runs the iter/task program once to create entries for the threads
// that exist now.
func (p *Probe) seed() error {
	if err := probe.RunIter(link.IterOptions{Program: p.objs.Seed}); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	return nil
}

// Stop detaches the probe, reads what it counted and releases it. It is safe
// to call on a nil or failed Probe and more than once.
func (p *Probe) Stop() (*Result, error) {
	if p == nil || !p.loaded {
		return nil, errors.New("timeacct: probe not started")
	}
	defer p.close()
	res, err := p.read()
	return res, err
}

// CloseWindow ends the window: the programs stop counting as soon as the
// flag is set. Stop ends it too when it is still open; calling this first
// lets the caller read the kernel's counters right after the edge.
func (p *Probe) CloseWindow() {
	if p == nil || !p.loaded || p.endNs != 0 {
		return
	}
	p.closeErr = p.objs.Stopped.Set(uint32(1))
	p.endNs = probe.MonotonicNs()
}

// read ends the window and reads every map; the probe stays loaded.
func (p *Probe) read() (*Result, error) {
	var errs []error
	// Detaching the programs takes a few hundred ms, which is not part of
	// the window.
	p.CloseWindow()
	if p.closeErr != nil {
		errs = append(errs, fmt.Errorf("variable stopped: %w", p.closeErr))
	}
	end := p.endNs
	if err := probe.CloseLinks(p.links); err != nil {
		errs = append(errs, fmt.Errorf("detach: %w", err))
	}
	p.links = nil
	p.stopCompactor()
	res := &Result{StartNs: p.startNs, EndNs: end, SyncNote: p.syncNote, Syscalls: p.cfg.Syscalls, Stacks: p.cfg.Stacks, CtxNote: p.ctxNote,
		SampleNote: p.sampleNote, QueuedNote: p.enqueueNote}
	if res.Sampled = p.sampleNote == ""; res.Sampled {
		res.SampleHz = sysinfo.KernelHZ()
		res.TickStackEvery = int(p.tickEvery)
	}

	for k := range NumSyncKinds {
		var ss []timeacctTaSyncStats
		if err := p.objs.SyncStats.Lookup(uint32(k), &ss); err != nil {
			errs = append(errs, fmt.Errorf("map sync_stats: %w", err))
			break
		}
		out := &res.Sync[k]
		for _, s := range ss {
			out.Count += s.Count
			out.TotalNs += s.TotalNs
			for i, v := range s.Slots {
				out.LatencyLog2Us[i] += v
			}
			for i, v := range s.CatNs {
				out.CatNs[i] += v
			}
			out.Split += s.Split
			out.SplitNs += s.SplitNs
		}
	}

	var cs []timeacctTaCounters
	if err := p.objs.Counters.Lookup(uint32(0), &cs); err != nil {
		errs = append(errs, fmt.Errorf("map counters: %w", err))
	}
	for _, c := range cs {
		res.Forks += c.ProcessForks
		res.ThreadCreates += c.ThreadCreates
		res.Exits += c.Exits
		res.Dropped += c.Dropped + c.SysDropped + c.FileDropped + c.EdgeDropped
		for k, n := range map[string]uint64{model.DroppedThreads: c.Dropped, model.DroppedWaits: c.EdgeDropped,
			model.DroppedSyscalls: c.SysDropped, model.DroppedSyncedFiles: c.FileDropped} {
			if n > 0 {
				if res.DroppedBy == nil {
					res.DroppedBy = map[string]uint64{}
				}
				res.DroppedBy[k] += n
			}
		}
		res.FoldedSyncs += c.FileFolded
		res.StackWalks += c.StackWalks
		res.LockWalks += c.LockWalks
		res.EdgeCPUEvictions += c.EdgeCpuEvictions
		res.LockDropped += c.LockDropped
		res.TickStackRuns += c.TickStacks
		res.TickDropped += c.TickDropped
		res.RQReads += c.RqReads
		res.RQMisses += c.RqMisses
		res.Unseen.Switches += c.UnseenSwitches
		res.Unseen.Ins += c.UnseenIns
		res.Unseen.InsTimed += c.UnseenInsTimed
		res.Unseen.Outs += c.UnseenOuts
		res.Unseen.OutsTimed += c.UnseenOutsTimed
		res.QueuedWakeups += c.WakeupsQueued
		res.QueuedWakeupsNs += c.WakeupsQueuedNs
		for i := range NumPrograms {
			res.Runs[i] += c.Runs[i]
			res.TrackedRuns[i] += c.Tracked[i]
		}
	}
	res.ClockSkewNs, res.ClockCPUs = p.clockSkew()
	if res.Costs = p.cfg.Costs; res.Costs != nil {
		res.EstimatedNs, res.CostNote = res.Costs.Estimate(res.Runs, res.TrackedRuns)
	} else {
		res.CostNote = "the probe's cost was not calibrated"
	}

	res.MissedRuns = p.missedRuns()
	entries := p.threadEntries()
	for _, v := range entries {
		// A program that read the flag just before it was set may have
		// stamped a time after end; the window then ends there.
		end = max(end, v.LastNs, v.ExitNs)
	}
	res.EndNs = end
	var peak uint64
	if err := p.objs.Peak.Get(&peak); err != nil {
		errs = append(errs, fmt.Errorf("variable peak: %w", err))
	}
	res.PeakThreads = int(peak)
	var tgid uint32
	var agg timeacctTaAgg
	aiter := p.objs.ExitedAgg.Iterate()
	for aiter.Next(&tgid, &agg) {
		if agg.Threads == 0 {
			continue // the catch-all, unused
		}
		th := foldedThreads(&agg)
		if tgid == 0 {
			th.Comm = fmt.Sprintf("processes past %d", p.objs.ExitedAgg.MaxEntries()-1)
			res.FoldedProcesses = true
		}
		res.Threads = append(res.Threads, th)
	}
	if err := aiter.Err(); err != nil {
		errs = append(errs, fmt.Errorf("map exited_agg: %w", err))
	}
	errs = append(errs, p.readEdges(res, entries, end))
	for i := range entries {
		v := &entries[i]
		th := closeThread(v, p.startNs, end)
		if !th.Exited {
			// The kernel side reads comm only at creation and exit; a
			// live thread may have renamed itself or exec'd since.
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/comm", th.PID, th.TID)); err == nil {
				th.Comm = strings.TrimSuffix(string(b), "\n")
			}
		}
		res.Threads = append(res.Threads, th)
	}
	var wakeups uint64
	for _, th := range res.Threads {
		wakeups += th.Wakeups
	}
	if wakeups > 0 && res.QueuedWakeups == 0 {
		// Measured, not assumed: a kernel without CONFIG_SCHED_INFO
		// keeps no last_queued (bpf/timeacct.bpf.c woken).
		res.QueuedNote = joinNotes(res.QueuedNote, "no wake-up's run-queue wait was read from the kernel's record of its queueing (sched_info.last_queued: a kernel without CONFIG_SCHED_INFO): sleeps end at sched_waking, a few microseconds of each run-queue wait on a busy machine reading as the sleep before it")
	}
	errs = append(errs, p.readFiles(res), p.readSyscalls(res), p.readLocks(res, entries, end), p.readTickStacks(res))
	if p.cfg.Stacks {
		errs = append(errs, p.readOffCPU(res, entries, end))
	}
	return res, errors.Join(errs...)
}

// readEdges reads the wait-for edges: the map's, each live entry's edge
// not yet flushed, and each open wait or run-queue wait closed at end (as
// closeThread closes it, with no waker: it had not ended).
func (p *Probe) readEdges(res *Result, entries []timeacctTaThread, end uint64) error {
	sum := map[timeacctTaEdgeKey]*Edge{}
	add := func(k timeacctTaEdgeKey, ns, count uint64) {
		e := sum[k]
		if e == nil {
			e = &Edge{PID: int(k.Tgid), TID: int(k.Tid), Gen: k.Gen, Act: int(k.Act), Cat: int(k.Cat), Kind: int(k.Kind), ID: k.Id}
			sum[k] = e
		}
		e.Ns += ns
		e.Count += count
	}
	var k timeacctTaEdgeKey
	var v timeacctTaEdge
	it := p.objs.Edges.Iterate()
	for it.Next(&k, &v) {
		add(k, v.Ns, v.Count)
	}
	var errs []error
	if err := it.Err(); err != nil {
		errs = append(errs, fmt.Errorf("map edges: %w", err))
	}
	// The edges of threads gone that the compaction took out of the map.
	for k, v := range p.compactor.folded {
		add(k, v.Ns, v.Count)
	}
	if c := p.compactor; c.runs > 0 {
		res.EdgeNote = fmt.Sprintf("the waits of threads gone were kept by process %d times during the run (%d keys)", c.runs, c.deleted)
		if c.err != nil {
			res.EdgeNote += fmt.Sprintf("; one failed (%v): waits may have been dropped", c.err)
		}
	}
	for i := range entries {
		t := &entries[i]
		for _, e := range t.Edge {
			if e.Count > 0 {
				add(e.K, e.Ns, uint64(e.Count))
			}
		}
		if from := max(t.LastNs, p.startNs); t.Exited == 0 && t.State != stateRunning && end > from && t.LastNs > 0 {
			cat := uint8(t.Cat)
			if t.State == stateRunnable {
				cat = CatCPUWait
			}
			add(timeacctTaEdgeKey{Tid: t.Tid, Tgid: t.Tgid, Gen: uint32(t.FirstNs), Act: uint8(t.Act), Cat: cat, Kind: WakerNone}, end-from, 1)
		}
	}
	for _, e := range sum {
		res.Edges = append(res.Edges, *e)
	}
	slices.SortFunc(res.Edges, func(a, b Edge) int { return cmp.Compare(b.Ns, a.Ns) })
	res.WakerNames = map[uint32]WakerName{}
	var pid uint32
	var n timeacctWakerName
	nit := p.objs.WakerNames.Iterate()
	for nit.Next(&pid, &n) {
		res.WakerNames[pid] = WakerName{PID: int(n.Tgid), PPID: int(n.Ppid), Comm: unix.ByteSliceToString(n.Comm[:]), Kthread: n.Kthread != 0}
	}
	if err := nit.Err(); err != nil {
		errs = append(errs, fmt.Errorf("map waker_names: %w", err))
	}
	return errors.Join(errs...)
}

// foldedThreads converts the aggregate of a process's exited threads into
// one Thread with TID 0 and Folded set to how many threads it holds.
func foldedThreads(a *timeacctTaAgg) Thread {
	return Thread{
		PID:              int(a.Tgid),
		Comm:             unix.ByteSliceToString(a.Comm[:]),
		Ns:               a.Ns,
		WallNs:           a.WallNs,
		FromNs:           a.FirstNs,
		ToNs:             a.LastNs,
		UserNs:           a.UtimeNs,
		SysNs:            a.StimeNs,
		UserTicks:        a.UtimeNs / (1e9 / userHZ),
		SysTicks:         a.StimeNs / (1e9 / userHZ),
		Switches:         a.Switches,
		Involuntary:      a.Involuntary,
		Wakeups:          a.Wakeups,
		FutexLockBlocks:  a.FutexLockBlocks,
		FutexSleepBlocks: a.FutexSleepBlocks,
		Exited:           true,
		Folded:           int(a.Threads),
		Samples:          samples(a.Samples),
		UnchargedNs:      a.UnchargedNs,
		StealNs:          a.StealNs,
		CutLagNs:         a.CutLagNs,
		CutLags:          a.CutLags,
	}
}

// samples are a thread's on-CPU samples by activity (Activities).
func samples(s [14]uint32) (out [len(Activities)]uint64) {
	for i := range out {
		out[i] = uint64(s[i])
	}
	return out
}

// closeThread converts an entry, closing its open interval at end (or at its
// exit, where the kernel closed it already); its time counts from start,
// the window's opening, at the earliest.
func closeThread(v *timeacctTaThread, start, end uint64) Thread {
	t := Thread{
		PID:              int(v.Tgid),
		TID:              int(v.Tid),
		Comm:             unix.ByteSliceToString(v.Comm[:]),
		Ns:               v.Ns,
		UserNs:           v.UtimeNs,
		SysNs:            v.StimeNs,
		UserTicks:        v.UtimeNs / (1e9 / userHZ),
		SysTicks:         v.StimeNs / (1e9 / userHZ),
		Switches:         v.Switches,
		Involuntary:      v.Involuntary,
		Wakeups:          v.Wakeups,
		FutexLockBlocks:  v.FutexLockBlocks,
		FutexSleepBlocks: v.FutexSleepBlocks,
		Exited:           v.Exited != 0,
		Samples:          samples(v.Samples),
		ExitRunNs:        v.ExitRunNs,
		ExitWaitNs:       v.ExitWaitNs,
		ExitRuns:         v.ExitRuns,
		UnchargedNs:      v.UnchargedNs,
		StealNs:          v.StealNs,
		StaleWakeups:     v.StaleWakeups,
		StaleNs:          v.StaleNs,
		CutLagNs:         v.CutLagNs,
		CutLags:          v.CutLags,
	}
	last := end
	if t.Exited {
		last = v.ExitNs
	} else if from := max(v.LastNs, start); end > from {
		cat := v.Cat
		switch v.State {
		case stateRunning:
			cat = CatCPU
		case stateRunnable:
			cat = CatCPUWait
		}
		t.Ns[cat%NumCategories] += end - from
	} else {
		last = max(v.LastNs, start)
	}
	first := max(v.FirstNs, start)
	t.FromNs, t.ToNs = v.FirstNs, max(last, first)
	if last > first {
		t.WallNs = last - first
	}
	return t
}

// Thread states, TA_STATE_* in bpf/timeacct.h.
const (
	stateRunning  = 0
	stateRunnable = 1
	stateBlocked  = 2
)

func (p *Probe) close() {
	probe.CloseLinks(p.links)
	p.links = nil
	p.stopCompactor()
	p.tracked.Close()
	p.tracked = nil
	p.slots.Close()
	p.slots = nil
	if p.loaded {
		p.objs.timeacctMaps.Close()
		for _, prog := range p.objs.programs() {
			prog.Close()
		}
		p.loaded = false
	}
	if p.coll != nil {
		p.coll.Close()
		// After the links: a kept collection is emptied for its next use.
		probe.Release(p.coll)
		p.coll = nil
	}
}

// SharedMaps are the maps another probe uses to follow the same workload:
// the tracked processes and each thread's time per category, with the
// index of the threads' entries (bpf/threads.bpf.h). They live until Stop.
func (p *Probe) SharedMaps() probe.Shared {
	return probe.Shared{Tracked: p.objs.Tracked, Threads: p.objs.Threads, ThreadIdx: p.objs.ThreadIdx}
}

// ProcEvents is a ring buffer of the tgids of the tree's processes that
// start (fork) or exec, for the mappings keeper (probe.SharedProcEvents); nil
// when the exec hook did not attach. Valid until Stop.
func (p *Probe) ProcEvents() *ebpf.Map {
	if !p.execs {
		return nil
	}
	return p.objs.ProcEvents
}

// threadEntries copies the threads' entries out of their slots (a slot
// whose tid is 0 is free).
func (p *Probe) threadEntries() []timeacctTaThread {
	var out []timeacctTaThread
	if p.slots == nil {
		return nil
	}
	for i := 1; i < p.slots.Len(); i++ {
		b := p.slots.At(i)
		v := *(*timeacctTaThread)(unsafe.Pointer(&b[0]))
		if v.Tid != 0 {
			out = append(out, v)
		}
	}
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ThreadEntrySize is the size of the threads map's value (struct ta_thread
// of bpf/timeacct.h): a probe loaded with the shared map in place of its
// own must have been generated from the same header.
func ThreadEntrySize() uint32 { return uint32(unsafe.Sizeof(timeacctTaThread{})) }

// missedRuns reads each program's recursion misses (probe.MissedRuns),
// named as the programs' costs are (ProgramNames; the CPU-context markers
// together): a missed sched_switch leaves a thread in its last state until
// its next event.
func (p *Probe) missedRuns() map[string]int64 {
	return probe.MissedRuns(func(yield func(string, *ebpf.Program) bool) {
		for i, prog := range p.grouped {
			if !yield(ProgramNames[i], prog) {
				return
			}
		}
	})
}

// grouped yields each attached program with the group (TA_PROG_*) its
// runs are counted in: progs at their index, the CPU-context markers
// (ctxProgs) in ProgCtx, handle_free with the exits. Its kernel
// statistics go to the same group.
func (p *Probe) grouped(yield func(int, *ebpf.Program) bool) {
	for i, prog := range p.progs {
		if prog != nil && !yield(i, prog) {
			return
		}
	}
	for _, prog := range p.ctxProgs {
		if !yield(ProgCtx, prog) {
			return
		}
	}
	if p.objs.HandleFree != nil {
		yield(ProgExit, p.objs.HandleFree)
	}
}

// programObject is the probe's BPF object: a calibration is for its programs.
var programObject = _TimeacctBytes

// clockSkew is how far apart the CPUs' scheduler clocks were against
// ktime (Result.ClockSkewNs), from each CPU's least offset at its own
// enqueues (bpf handle_enqueue), and how many CPUs had one.
func (p *Probe) clockSkew() (uint64, int) {
	var lo, hi int64
	n := 0
	var e timeacctTaEnq
	for cpu := uint32(0); cpu < p.objs.RqEnq.MaxEntries(); cpu++ {
		if p.objs.RqEnq.Lookup(cpu, &e) != nil || e.OffN == 0 {
			continue
		}
		if n == 0 || e.OffMin < lo {
			lo = e.OffMin
		}
		if n == 0 || e.OffMin > hi {
			hi = e.OffMin
		}
		n++
	}
	if n < 2 {
		return 0, n
	}
	return uint64(hi - lo), n
}
