package runner

import (
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/probe/profile"
	"github.com/perfsleuth/perfsleuth/internal/probe/storage"
	"github.com/perfsleuth/perfsleuth/internal/probe/timeacct"
	"github.com/perfsleuth/perfsleuth/internal/sqlitetrace"
	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
)

// accountant runs the eBPF time-accounting probe over a process tree, or
// says why it could not (then the /proc fallback accounts for cpu only).
type accountant struct {
	probe *timeacct.Probe
	// costNote says why the probe's cost is not estimated, if it is not.
	costNote string
	// maps keeps the last snapshot of each process's mappings, taken while
	// it ran, to symbolise user stacks after it exits (Stacks only).
	maps *mapsKeeper
	// storage is the storage probe, nil if it could not start (storeNote
	// says why); sqlite maps its SQLite events to pages (with Storage).
	storage   *storage.Probe
	storeNote string
	sqlite    *sqlitetrace.Tracer
	// prof samples the workload's stacks on CPU (Stacks), nil if it could
	// not start (profNote says why).
	prof     *profile.Probe
	profNote string
}

// calibrations caches the probe's calibrated costs per probe setting: they
// depend on the host, not on the workload, and calibrating takes ~0.5 s.
var calibrations struct {
	sync.Mutex
	costs map[[2]bool]*timeacct.Costs
	notes map[[2]bool]string
	// The storage probe's, per Files setting, and why there are none.
	storage      map[bool]*storage.Costs
	storageNotes map[bool]string
}

// calibrateStorage returns the storage probe's costs for files, measured
// once per process, or nil and why they could not be (the probe's
// estimate then says so).
func calibrateStorage(files bool) (*storage.Costs, string) {
	calibrations.Lock()
	defer calibrations.Unlock()
	if c, ok := calibrations.storage[files]; ok {
		return c, calibrations.storageNotes[files]
	}
	if calibrations.storage == nil {
		calibrations.storage, calibrations.storageNotes = map[bool]*storage.Costs{}, map[bool]string{}
	}
	c, err := storage.Calibrate(files, ".")
	if err != nil {
		calibrations.storageNotes[files] = err.Error()
	}
	calibrations.storage[files] = c
	return c, calibrations.storageNotes[files]
}

// addProbeCost adds another probe's programs to the accounting's stated
// cost: the probe's cost is all of perfsleuth's programs'.
func addProbeCost(ta *model.TimeAccounting, sec float64, runs int64, progs ...model.ProgramCost) {
	ta.ProbeCPUSec += sec
	ta.ProbeRuns += runs
	ta.Programs = append(ta.Programs, progs...)
}

// calibrate returns the probe's costs for cfg's settings, measured once per
// process. The sync programs are calibrated on an unnamed temporary file in
// the current directory, perfsleuth's working directory.
func calibrate(cfg timeacct.Config) (*timeacct.Costs, string) {
	calibrations.Lock()
	defer calibrations.Unlock()
	key := [2]bool{cfg.Syscalls, cfg.Stacks}
	if c, ok := calibrations.costs[key]; ok {
		return c, calibrations.notes[key]
	}
	if calibrations.costs == nil {
		calibrations.costs, calibrations.notes = map[[2]bool]*timeacct.Costs{}, map[[2]bool]string{}
	}
	c, err := timeacct.Calibrate(cfg, ".")
	note := ""
	if err != nil {
		note = "the probe's cost is not estimated: " + err.Error()
	}
	calibrations.costs[key], calibrations.notes[key] = c, note
	return c, note
}

// calibrateAhead calibrates the probe for opts in the background, so that it
// overlaps what comes before the window; startAccounting then finds the
// costs ready or waits for them. If perfsleuth exits first, nothing is left
// behind: the probe goes with the process, the sync file has no name.
func calibrateAhead(opts ObserveOptions) {
	if opts.NoEBPF || os.Geteuid() != 0 {
		return
	}
	go func() {
		calibrate(timeacct.Config{Syscalls: opts.Syscalls, Stacks: opts.Stacks})
		calibrateStorage(opts.Storage)
	}()
}

// startAccounting attaches the probe to the tree below pid. A failure is not
// an error: the run goes on without it, and the returned warning says why
// and what to do.
func startAccounting(pid int, opts ObserveOptions) (*accountant, string) {
	if opts.NoEBPF {
		return nil, ""
	}
	if os.Geteuid() != 0 {
		return nil, "not root: eBPF time accounting is off, so off-CPU time shows as unknown; run with sudo to see storage, lock and run-queue waits"
	}
	cfg := timeacct.Config{RootPID: pid, Syscalls: opts.Syscalls, Stacks: opts.Stacks}
	costs, note := calibrate(cfg)
	cfg.Costs = costs
	p, err := timeacct.Start(cfg)
	if err != nil {
		return nil, fmt.Sprintf("eBPF time accounting is off (%v): off-CPU time shows as unknown; 'perfsleuth doctor' says what this kernel lacks", err)
	}
	a := &accountant{probe: p, costNote: note}
	if opts.Stacks {
		a.maps = keepMaps(pid)
		tracked, _ := p.SharedMaps()
		if a.prof, err = profile.Start(profile.Config{Hz: profile.DefaultHz}, tracked); err != nil {
			a.profNote = "no on-CPU stacks: " + err.Error()
		}
	}
	a.startStorage(opts)
	return a, ""
}

// finish detaches the probe and puts its accounting in the run. Safe on nil.
func (a *accountant) finish(run *model.Run) {
	if a == nil {
		return
	}
	a.maps.stop()
	a.finishStorage(run)
	var prof *profile.Result
	if a.prof != nil {
		var err error
		if prof, err = a.prof.Stop(); err != nil {
			a.profNote = "on-CPU stacks incomplete: " + err.Error()
		}
		a.prof = nil
	}
	res, err := a.probe.Stop()
	a.probe = nil
	if err != nil {
		run.Warnings = append(run.Warnings, "eBPF time accounting failed: "+err.Error())
		return
	}
	run.TimeAccounting = fromProbe(res)
	if res.Costs == nil {
		run.TimeAccounting.ProbeNote = a.costNote
	}
	if st := run.Storage; st != nil {
		addProbeCost(run.TimeAccounting, st.ProbeCPUSec, st.ProbeRuns, st.Programs...)
	}
	if res.Stacks {
		n := newNamer(a.maps)
		run.TimeAccounting.OffCPU = symbolise(res.OffCPU, n)
		run.TimeAccounting.OnCPUNote = a.profNote
		if prof != nil {
			run.TimeAccounting.OnCPUHz = prof.Hz
			run.TimeAccounting.OnCPU = symboliseOnCPU(prof, n)
			if len(prof.Stacks) == 0 && a.profNote == "" {
				run.TimeAccounting.OnCPUNote = "no sample of the workload's threads on a CPU: it ran for less than a sampling period"
			}
			sec, pc := prof.Cost()
			addProbeCost(run.TimeAccounting, sec, pc.Runs, pc)
			if prof.Dropped > 0 {
				run.Warnings = append(run.Warnings, fmt.Sprintf("%d on-CPU samples dropped: the sampler's map was full", prof.Dropped))
			}
		}
	}
}

// close detaches the probe if finish did not (error paths). Safe on nil.
func (a *accountant) close() {
	if a != nil && a.probe != nil {
		a.maps.stop()
		if a.storage != nil {
			a.storage.Stop()
			a.storage = nil
		}
		if a.sqlite != nil {
			a.sqlite.Close()
		}
		if a.prof != nil {
			a.prof.Stop()
			a.prof = nil
		}
		a.probe.Stop()
	}
}

// startStorage attaches the storage probe to the processes the
// time-accounting probe follows. A failure leaves a note in the record.
func (a *accountant) startStorage(opts ObserveOptions) {
	cfg := storage.Config{Files: opts.Storage}
	cfg.Costs, cfg.CostsNote = calibrateStorage(opts.Storage)
	if opts.Storage {
		a.sqlite = sqlitetrace.New()
		cfg.OnEvent = a.sqlite.Add
	}
	tracked, threads := a.probe.SharedMaps()
	p, err := storage.Start(cfg, tracked, threads)
	if err != nil {
		a.storeNote = "the storage probe is off (" + err.Error() + "): no block-device, page-cache or file view from eBPF"
		a.sqlite = nil
		return
	}
	a.storage = p
}

// finishStorage detaches the storage probe and puts what it saw in run.
func (a *accountant) finishStorage(run *model.Run) {
	if a.storeNote != "" {
		run.Warnings = append(run.Warnings, a.storeNote)
	}
	if a.storage == nil {
		return
	}
	st, err := a.storage.Stop()
	a.storage = nil
	if err != nil {
		run.Warnings = append(run.Warnings, "the storage probe failed: "+err.Error())
		if st == nil {
			return
		}
	}
	if a.sqlite != nil {
		st.SQLite = a.sqlite.Finish(st.Files)
	}
	run.Storage = st
}

// fromProbe converts the probe's counts into the run record's accounting.
func fromProbe(r *timeacct.Result) *model.TimeAccounting {
	ta := &model.TimeAccounting{
		Source:           "ebpf",
		WindowSec:        float64(r.EndNs-r.StartNs) / 1e9,
		ThreadsCreated:   int64(r.ThreadCreates + r.Forks),
		ThreadsExited:    int64(r.Exits),
		ProcessesCreated: int64(r.Forks),
		Dropped:          int64(r.Dropped),
		SyncNote:         r.SyncNote,
		ProbeCPUSec:      float64(r.EstimatedNs) / 1e9,
		ProbeNote:        r.CostNote,
	}
	for i := range timeacct.NumPrograms {
		if r.Runs[i] == 0 {
			continue
		}
		ta.ProbeRuns += int64(r.Runs[i])
		pc := model.ProgramCost{Name: timeacct.ProgramNames[i], Runs: int64(r.Runs[i]), TrackedRuns: int64(r.TrackedRuns[i])}
		if c := r.Costs; c != nil {
			pc.UntrackedNs, pc.TrackedNs = c.UntrackedNs[i], c.TrackedNs[i]
		}
		ta.Programs = append(ta.Programs, pc)
	}
	ta.PeakThreads = r.PeakThreads
	for k, st := range r.Sync {
		if st.Count == 0 {
			continue
		}
		ta.Syncs = append(ta.Syncs, model.SyncCalls{Kind: timeacct.SyncKinds[k], Count: int64(st.Count),
			TotalSec: float64(st.TotalNs) / 1e9, Buckets: log2Buckets(st.LatencyLog2Us[:], 1000)})
	}
	for _, f := range r.Files {
		ta.SyncedFiles = append(ta.SyncedFiles, model.SyncedFile{Path: f.Path, Dev: f.Dev, Ino: f.Ino, PID: f.PID,
			Count: int64(f.Count), DataSync: int64(f.DataSync), TotalSec: float64(f.TotalNs) / 1e9, MaxSec: float64(f.MaxNs) / 1e9})
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
			secs[timeacct.Categories[i]] = float64(ns) / 1e9
		}
		cpu := secs[model.CatCPU]
		// utime/stime are cumulative since the thread started; their ratio
		// splits the window's cpu time into user and system.
		user := cpu
		if tot := t.UserNs + t.SysNs; tot > 0 {
			user = cpu * float64(t.UserNs) / float64(tot)
		}
		ta.Threads = append(ta.Threads, model.ThreadTime{
			PID: t.PID, TID: t.TID, Comm: t.Comm, WallSec: float64(t.WallNs) / 1e9,
			Seconds: secs, UserSec: user, SystemSec: cpu - user, Exited: t.Exited, Folded: t.Folded,
		})
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

// CheckTimeAccounting says, for perfsleuth doctor, whether the eBPF
// time-accounting probe loads and attaches here, by doing it (on this
// process, for a moment), and what observation falls back to if not.
func CheckTimeAccounting() sysinfo.Check {
	c := sysinfo.Check{Name: "time_accounting"}
	if os.Geteuid() != 0 {
		c.Status, c.Detail = sysinfo.StatusMissing, "not root: observe accounts cpu time only (from /proc); off-CPU time shows as unknown"
		c.Fix = "run perfsleuth as root (sudo) for time accounting by cause"
		return c
	}
	p, err := timeacct.Start(timeacct.Config{RootPID: os.Getpid()})
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
	default:
		c.Status, c.Detail = sysinfo.StatusOK, "the eBPF probe loads and attaches: observe accounts every thread's time by cause"
	}
	if costs, note := calibrate(timeacct.Config{}); costs != nil {
		c.Detail += fmt.Sprintf("; calibrated cost per run: sched_switch %.0f ns (other tasks) / %.0f ns (the workload's), sched_wakeup %.0f / %.0f ns",
			costs.UntrackedNs[timeacct.ProgSwitch], costs.TrackedNs[timeacct.ProgSwitch],
			costs.UntrackedNs[timeacct.ProgWakeup], costs.TrackedNs[timeacct.ProgWakeup])
	} else {
		c.Detail += "; " + note
	}
	return c
}
