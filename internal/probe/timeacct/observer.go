package timeacct

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/probe"
	"github.com/perfsleuth/perfsleuth/internal/symbolize"
	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
)

// The maps this probe lends the probes that follow the same workload
// (probe.Session.Map): the processes it tracks, and each thread's time.
const (
	SharedTracked = "tracked"
	SharedThreads = "threads"
	// SharedThreadIdx is the index of the threads' entries.
	SharedThreadIdx = "thread_idx"
)

// New returns the time accounting as a probe.Probe: it accounts for every
// thread's wall time by category, and lends its tracked map to the other
// eBPF probes.
func New() probe.Probe { return &observer{} }

type observer struct {
	p        *Probe
	s        *probe.Session
	costNote string
	res      *Result
	err      error
	// kernel reads the kernel's own accounting at the window's start and
	// end, for kernelAgreement.
	kernel kernelWatch
}

func (o *observer) Info() probe.Info { return probe.Info{Name: "timeacct"} }

func (o *observer) Wanted(opts probe.Options) bool { return !opts.NoEBPF }

func (o *observer) Calibrate(opts probe.Options) {
	if os.Geteuid() == 0 {
		calibrated(Config{Syscalls: opts.Syscalls, Stacks: opts.Stacks})
	}
}

func (o *observer) Start(_ context.Context, s *probe.Session) error {
	if os.Geteuid() != 0 {
		return errors.New("not root: eBPF time accounting is off, so off-CPU time shows as unknown; run with sudo to see storage, lock and run-queue waits")
	}
	cfg := Config{Roots: s.Roots, Syscalls: s.Syscalls, Stacks: s.Stacks, DeferWindow: true}
	cfg.Costs, o.costNote = calibrated(cfg)
	p, err := Start(cfg)
	if err != nil {
		return fmt.Errorf("eBPF time accounting is off (%v): off-CPU time shows as unknown; 'perfsleuth doctor' says what this kernel lacks", err)
	}
	o.p, o.s = p, s
	sh := p.SharedMaps()
	s.Share(SharedTracked, sh.Tracked)
	s.Share(SharedThreads, sh.Threads)
	s.Share(SharedThreadIdx, sh.ThreadIdx)
	if m := p.ProcEvents(); m != nil {
		s.Share(probe.SharedProcEvents, m)
	}
	// The processes' mappings, kept from now on: the user frames of the
	// lock waits' stacks (and of --stacks) are named against them.
	s.Mappings()
	return nil
}

// Open opens the accounting's window once every probe has started
// (probe.Opener): the agreement with the kernel's accounting starts
// there too.
func (o *observer) Open() {
	if o.p == nil {
		return
	}
	o.kernel.begin(o.s.Roots)
	if err := o.p.Open(); err != nil {
		o.err = err
	}
	o.kernel.opened()
}

func (o *observer) Stop() error {
	if o.p == nil {
		return nil
	}
	o.kernel.finish()
	o.p.CloseWindow()
	o.kernel.closed()
	o.res, o.err = o.p.Stop()
	o.p = nil
	return o.err
}

func (o *observer) Contribute(run *model.Run) {
	if o.err != nil {
		run.Warnings = append(run.Warnings, "eBPF time accounting failed: "+o.err.Error())
		return
	}
	if o.res == nil {
		return
	}
	ta := toModel(o.res)
	if o.res.Costs == nil {
		ta.ProbeNote = o.costNote
	}
	if o.res.Stacks {
		ta.OffCPU = nameOffCPU(o.res.OffCPU, o.s.Namer())
	}
	ta.Locks, ta.LocksNote = locksOf(o.res.Locks, o.res.LockWalks, o.res.LockDropped, o.s.Namer)
	tickOnCPU(ta, o.res, o.s.Namer)
	ta.Kernel = o.kernel.agreement(ta, o.res.Threads)
	if k := ta.Kernel; k != nil && o.res.ClockCPUs >= 2 {
		k.ClockSkewSec, k.ClockCPUs = float64(o.res.ClockSkewNs)/1e9, o.res.ClockCPUs
	}
	run.TimeAccounting = ta
	if o.res.FoldedProcesses {
		run.Warnings = append(run.Warnings, "more processes of the workload exited than the time accounting keeps apart: the threads of the later ones are counted together, under pid 0 (\"processes past ...\")")
	}
}

// tickRates are the tick rates kernels are built with (CONFIG_HZ).
var tickRates = []int{100, 250, 300, 1000}

// estimateHz is the tick rate the samples were taken at, when the kernel's
// config does not say: the samples per second of the threads' cpu time,
// rounded to the nearest rate kernels are built with; 0 without a sample.
func estimateHz(threads []Thread) int {
	var n uint64
	var cpu float64
	for _, t := range threads {
		for _, s := range t.Samples {
			n += s
		}
		cpu += float64(t.Ns[CatCPU]) / 1e9
	}
	if n == 0 || cpu <= 0 {
		return 0
	}
	rate := float64(n) / cpu
	best := tickRates[0]
	for _, hz := range tickRates {
		if math.Abs(float64(hz)-rate) < math.Abs(float64(best)-rate) {
			best = hz
		}
	}
	return best
}

// cpuByActivity splits a thread's cpu seconds by activity in proportion to
// its on-CPU samples; without a sample, all of it is unsampled.
func cpuByActivity(cpu float64, samples [len(Activities)]uint64) (map[string]float64, int64) {
	var n uint64
	for _, s := range samples {
		n += s
	}
	if cpu <= 0 {
		return map[string]float64{}, int64(n)
	}
	if n == 0 {
		return map[string]float64{model.ActivityUnsampled: cpu}, 0
	}
	out := map[string]float64{}
	for i, s := range samples {
		if s > 0 {
			out[Activities[i]] = cpu * float64(s) / float64(n)
		}
	}
	return out, int64(n)
}

// calibrations are the probe's costs per setting (Syscalls, Stacks).
var calibrations = probe.Calibrations[[2]bool, *Costs]{Name: "timeacct", Object: programObject}

// calibrated returns the probe's costs for cfg's settings, measured once
// per process (or read from the cache of an earlier one, probe.Calibrations),
// or nil and why. The sync programs are calibrated on an
// unnamed temporary file in the current directory, perfsleuth's working
// directory.
func calibrated(cfg Config) (*Costs, string) {
	c, note := calibrations.Get([2]bool{cfg.Syscalls, cfg.Stacks}, func() (*Costs, error) { return Calibrate(cfg, ".") })
	if note != "" {
		note = "the probe's cost is not estimated: " + note
	}
	return c, note
}

// Check says, for perfsleuth doctor, whether the probe loads and attaches
// here, by doing it (on this process, for a moment), and what observation
// falls back to if not.
func (o *observer) Check() sysinfo.Check {
	c := sysinfo.Check{Name: "time_accounting"}
	if os.Geteuid() != 0 {
		c.Status, c.Detail = sysinfo.StatusMissing, "not root: observe accounts cpu time only (from /proc); off-CPU time shows as unknown"
		c.Fix = "run perfsleuth as root (sudo) for time accounting by cause"
		return c
	}
	p, err := Start(Config{Roots: []int{os.Getpid()}})
	if err != nil {
		first, _, _ := strings.Cut(err.Error(), "\n")
		c.Status, c.Detail = sysinfo.StatusMissing, "the eBPF probe does not load here ("+first+"): observe falls back to /proc (cpu time only)"
		c.Fix = "a kernel with BTF, tp_btf and bpf_task_pt_regs (5.18+, x86-64) is needed; see the checks above"
		return c
	}
	res, err := p.Stop()
	switch {
	case err != nil:
		c.Status, c.Detail = sysinfo.StatusDegraded, "the eBPF probe attaches but reading it failed: "+err.Error()
	case res.SyncNote != "":
		c.Status, c.Detail = sysinfo.StatusDegraded, "eBPF time accounting works; sync calls are not timed: "+res.SyncNote
	case res.QueuedNote != "":
		c.Status, c.Detail = sysinfo.StatusDegraded, "eBPF time accounting works; "+res.QueuedNote
	default:
		c.Status, c.Detail = sysinfo.StatusOK, "the eBPF probe loads and attaches: observe accounts every thread's time by cause"
	}
	if costs, note := calibrated(Config{}); costs != nil {
		c.Detail += fmt.Sprintf("; calibrated cost per run: sched_switch %.0f ns (other tasks) / %.0f ns (the workload's), sched_waking %.0f / %.0f ns",
			costs.UntrackedNs[ProgSwitch], costs.TrackedNs[ProgSwitch],
			costs.UntrackedNs[ProgWaking], costs.TrackedNs[ProgWaking])
	} else {
		c.Detail += "; " + note
	}
	return c
}

// toModel converts the probe's counts into the run record's accounting.
func toModel(r *Result) *model.TimeAccounting {
	ta := &model.TimeAccounting{
		Source:           "ebpf",
		WindowSec:        float64(r.EndNs-r.StartNs) / 1e9,
		ThreadsCreated:   int64(r.ThreadCreates + r.Forks),
		ThreadsExited:    int64(r.Exits),
		ProcessesCreated: int64(r.Forks),
		Dropped:          int64(r.Dropped),
		DroppedBy:        droppedBy(r.DroppedBy),
		FoldedSyncs:      int64(r.FoldedSyncs),
		SyncNote:         r.SyncNote,
		ProbeCPUSec:      float64(r.EstimatedNs) / 1e9,
		ProbeNote:        r.CostNote,
	}
	for i := range NumPrograms {
		// The activity samples run inside hrtimer_expire_entry's
		// program: their cost is cpu_context's.
		if r.Runs[i] == 0 || i == ProgSample {
			continue
		}
		ta.ProbeRuns += int64(r.Runs[i])
		pc := model.ProgramCost{Name: ProgramNames[i], Runs: int64(r.Runs[i]), TrackedRuns: int64(r.TrackedRuns[i])}
		if c := r.Costs; c != nil {
			pc.UntrackedNs, pc.TrackedNs = c.UntrackedNs[i], c.TrackedNs[i]
		}
		ta.Programs = append(ta.Programs, pc)
	}
	ta.Waits, ta.WaitNote = waitsOf(r), joinNotes(r.CtxNote, r.EdgeNote)
	ta.ActivityHz, ta.ActivityNote = r.SampleHz, r.SampleNote
	if r.Sampled && r.SampleHz == 0 {
		ta.ActivityHz = estimateHz(r.Threads)
	}
	ta.PeakThreads = r.PeakThreads
	ta.MissedRuns = r.MissedRuns
	ta.QueuedWakeups, ta.QueuedWakeupsSec, ta.QueuedWakeupsNote = int64(r.QueuedWakeups), float64(r.QueuedWakeupsNs)/1e9, r.QueuedNote
	if u := r.Unseen; u != (Unseen{}) {
		ta.Unseen = &model.UnseenSwitches{Switches: int64(u.Switches), Ins: int64(u.Ins), InsTimed: int64(u.InsTimed),
			Outs: int64(u.Outs), OutsTimed: int64(u.OutsTimed)}
	}
	ta.StealMeasured, ta.StealNote = stealMeasured(r.RQReads, r.RQMisses)
	for k, st := range r.Sync {
		if st.Count == 0 {
			continue
		}
		sc := model.SyncCalls{Kind: SyncKinds[k], Count: int64(st.Count),
			TotalSec: float64(st.TotalNs) / 1e9, Buckets: log2Buckets(st.LatencyLog2Us[:], 1000),
			SplitCount: int64(st.Split), SplitSec: float64(st.SplitNs) / 1e9}
		for i, ns := range st.CatNs {
			if ns > 0 {
				if sc.Split == nil {
					sc.Split = map[string]float64{}
				}
				sc.Split[Categories[i]] = float64(ns) / 1e9
			}
		}
		ta.Syncs = append(ta.Syncs, sc)
	}
	for _, f := range r.Files {
		ta.SyncedFiles = append(ta.SyncedFiles, model.SyncedFile{Path: f.Path, Dev: f.Dev, Ino: f.Ino, PID: f.PID,
			Folded: f.Folded, FoldedFiles: int64(f.FoldedFiles), FirstPath: f.FirstPath, Gone: f.Gone, Count: int64(f.Count), DataSync: int64(f.DataSync), TotalSec: float64(f.TotalNs) / 1e9, MaxSec: float64(f.MaxNs) / 1e9})
	}
	if r.Syscalls {
		ta.Syscalls = []model.SyscallStat{}
	}
	for _, s := range r.SyscallStats {
		ta.Syscalls = append(ta.Syscalls, model.SyscallStat{PID: s.PID, TID: s.TID, Name: s.Name, Nr: s.Nr,
			Count: int64(s.Count), Errors: int64(s.Errors), TotalSec: float64(s.TotalNs) / 1e9, MaxSec: float64(s.MaxNs) / 1e9,
			Buckets: log2Buckets(s.LatencyLog2Ns[:], 1)})
	}
	for _, t := range r.Threads {
		secs := map[string]float64{}
		for i, ns := range t.Ns {
			secs[Categories[i]] = float64(ns) / 1e9
		}
		cpu := secs[model.CatCPU]
		// utime/stime are cumulative since the thread started; their ratio
		// splits the window's cpu time into user and system.
		user := cpu
		if tot := t.UserNs + t.SysNs; tot > 0 {
			user = cpu * float64(t.UserNs) / float64(tot)
		}
		th := model.ThreadTime{
			PID: t.PID, TID: t.TID, Comm: t.Comm, WallSec: float64(t.WallNs) / 1e9,
			Seconds: secs, UserSec: user, SystemSec: cpu - user, Exited: t.Exited, Folded: t.Folded,
			UnchargedSec: min(float64(t.UnchargedNs)/1e9, cpu), StealSec: min(float64(t.StealNs)/1e9, cpu),
			CutLagSec: min(float64(t.CutLagNs)/1e9, cpu), CutLags: int64(t.CutLags),
			KernelStaleSec: float64(t.StaleNs) / 1e9, KernelStaleWakeups: int64(t.StaleWakeups),
		}
		if r.Sampled {
			th.CPUByActivity, th.ActivitySamples = cpuByActivity(cpu, t.Samples)
		}
		ta.Threads = append(ta.Threads, th)
	}
	return ta
}

// log2Buckets turns a log2 histogram whose slot i counts values in
// [2^i, 2^(i+1)) units of unitNs into buckets (slot 0 from 0).
func log2Buckets(slots []uint64, unitNs int64) []model.Bucket {
	var out []model.Bucket
	for i, n := range slots {
		if n == 0 {
			continue
		}
		low := unitNs << i
		if i == 0 {
			low = 0
		}
		out = append(out, model.Bucket{LowNs: low, HighNs: unitNs<<(i+1) - 1, Count: int64(n)})
	}
	return out
}

// nameOffCPU names the frames of the off-CPU stacks, the most time first,
// keeping probe.MaxStacks of them.
func nameOffCPU(stacks []OffCPUStack, n *symbolize.Namer) []model.OffCPUStack {
	out := []model.OffCPUStack{}
	for i, s := range stacks {
		if i == probe.MaxStacks {
			break
		}
		o := model.OffCPUStack{PID: s.PID, TID: s.TID, Category: Categories[s.Category], Seconds: float64(s.Ns) / 1e9,
			Count: int64(s.Count), KernelNote: s.KernelErr, UserNote: s.UserErr}
		var kn, un string
		o.Kernel, o.User, kn, un = n.Name(s.PID, s.Kernel, s.User)
		o.KernelNote, o.UserNote = cmp.Or(kn, o.KernelNote), cmp.Or(un, o.UserNote)
		out = append(out, o)
	}
	return out
}

// waitsOf converts the probe's edges, naming the wakers: a peer by the
// thread list, the others by the names the probe kept. A run-queue wait
// ends with a process (what had the CPU), not a thread: the probe keys
// them by process, as the thread that happened to hold the CPU says
// nothing more and made every switch a hash update.
func waitsOf(r *Result) []model.Wait {
	if r.Edges == nil {
		return nil
	}
	peers := map[int]Thread{}
	procs := map[int]string{} // a workload process's name: its main thread's, else the first thread's
	for _, t := range r.Threads {
		if t.TID == t.PID || procs[t.PID] == "" {
			procs[t.PID] = cmp.Or(t.Comm, procs[t.PID])
		}
	}
	type instance struct {
		tid int
		gen uint32
	}
	listed := map[instance]bool{}
	for _, t := range r.Threads {
		if t.TID != 0 {
			peers[t.TID] = t
			listed[instance{t.TID, uint32(t.FromNs)}] = true
		}
	}
	out := make([]model.Wait, 0, len(r.Edges))
	for _, e := range r.Edges {
		// The waits of an exited thread folded into its process's entry
		// (TID 0), or of an earlier thread with a reused tid, go there.
		tid := e.TID
		if !listed[instance{e.TID, e.Gen}] {
			tid = 0
		}
		w := model.Wait{PID: e.PID, TID: tid, Activity: Activities[e.Act%len(Activities)], Category: Categories[e.Cat%NumCategories],
			Waker: WakerKinds[e.Kind%len(WakerKinds)], Count: int64(e.Count), Seconds: float64(e.Ns) / 1e9}
		if w.Category == model.CatCPUWait {
			nameHolder(&w, e, procs, r.WakerNames)
			out = append(out, w)
			continue
		}
		switch e.Kind {
		case WakerPeer:
			w.WakerTID = int(e.ID)
			if t, ok := peers[w.WakerTID]; ok {
				w.WakerPID, w.WakerComm = t.PID, t.Comm
			}
		case WakerKthread, WakerOutside:
			w.WakerTID = int(e.ID)
			if n, ok := r.WakerNames[e.ID]; ok {
				w.WakerPID, w.WakerComm = n.PID, n.Comm
				if e.Kind == WakerOutside {
					w.WakerPPID = n.PPID
				}
			}
		case WakerDevice:
			w.Op = DeviceOps[min(int(e.ID), len(DeviceOps)-1)]
		case WakerIRQ:
			w.IRQ = int(e.ID)
		case WakerSoftirq:
			if int(e.ID) < len(Softirqs) {
				w.Softirq = Softirqs[e.ID]
			}
		}
		out = append(out, w)
	}
	return out
}

// nameHolder names what had the CPU that a run-queue wait waited for: the
// probe keeps it by process (e.ID), named by the workload's threads for
// one of its own, by the probe's names otherwise (a kernel thread is its
// own process, and keeps its tid).
func nameHolder(w *model.Wait, e Edge, procs map[int]string, names map[uint32]WakerName) {
	if e.Kind != WakerPeer && e.Kind != WakerKthread && e.Kind != WakerOutside {
		return
	}
	w.WakerPID = int(e.ID)
	w.WakerComm = procs[w.WakerPID]
	if n, ok := names[e.ID]; ok && e.Kind != WakerPeer {
		w.WakerComm = n.Comm
		if e.Kind == WakerOutside {
			w.WakerPPID = n.PPID
		}
	}
	if e.Kind == WakerKthread {
		w.WakerTID = w.WakerPID
	}
}

// stealMisses: the run queue's clocks may be unreadable at a few
// switch-ins (a task whose CFS run queue pointer is another CPU's while it
// migrates); more than 1% of them unread makes the threads' steal a guess.
const stealMisses = 0.01

// stealMeasured says whether the threads' uncharged and steal time was
// measured, from how many switch-ins read their run queue's clocks.
func stealMeasured(reads, misses uint64) (bool, string) {
	switch {
	case reads == 0 && misses == 0:
		return false, "no switch-in of the workload's threads was seen in the window: steal not measured"
	case reads == 0:
		return false, "the run queue's clocks cannot be read on this kernel (no CFS group scheduling: sched_entity.cfs_rq): steal and the time the kernel does not charge not measured"
	case float64(misses) > stealMisses*float64(reads+misses):
		return false, fmt.Sprintf("the run queue's clocks were read at %d of %d switch-ins: steal not measured", reads, reads+misses)
	}
	return true, ""
}

// droppedBy converts Result.DroppedBy; nil stays nil.
func droppedBy(m map[string]uint64) map[string]int64 {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]int64, len(m))
	for k, n := range m {
		out[k] = int64(n)
	}
	return out
}

// joinNotes joins the notes that are not empty.
func joinNotes(notes ...string) string {
	var out []string
	for _, n := range notes {
		if n != "" {
			out = append(out, n)
		}
	}
	return strings.Join(out, "; ")
}
