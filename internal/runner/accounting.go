package runner

import (
	"fmt"
	"os"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/probe/timeacct"
	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
)

// accountant runs the eBPF time-accounting probe over a process tree, or
// says why it could not (then the /proc fallback accounts for cpu only).
type accountant struct {
	probe *timeacct.Probe
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
	p, err := timeacct.Start(timeacct.Config{RootPID: pid})
	if err != nil {
		return nil, fmt.Sprintf("eBPF time accounting is off (%v): off-CPU time shows as unknown; 'perfsleuth doctor' says what this kernel lacks", err)
	}
	return &accountant{probe: p}, ""
}

// finish detaches the probe and puts its accounting in the run. Safe on nil.
func (a *accountant) finish(run *model.Run) {
	if a == nil {
		return
	}
	res, err := a.probe.Stop()
	a.probe = nil
	if err != nil {
		run.Warnings = append(run.Warnings, "eBPF time accounting failed: "+err.Error())
		return
	}
	run.TimeAccounting = fromProbe(res)
}

// close detaches the probe if finish did not (error paths). Safe on nil.
func (a *accountant) close() {
	if a != nil && a.probe != nil {
		a.probe.Stop()
	}
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
		ProbeCPUSec:      float64(r.ProgramNs) / 1e9,
		ProbeRuns:        int64(r.ProgramRuns),
		ProbeNote:        r.CostNote,
	}
	ta.PeakThreads = r.PeakThreads
	for k, st := range r.Sync {
		if st.Count == 0 {
			continue
		}
		sc := model.SyncCalls{Kind: timeacct.SyncKinds[k], Count: int64(st.Count), TotalSec: float64(st.TotalNs) / 1e9}
		for i, n := range st.LatencyLog2Us {
			if n == 0 {
				continue
			}
			low := int64(1000) << i
			if i == 0 {
				low = 0
			}
			sc.Buckets = append(sc.Buckets, model.Bucket{LowNs: low, HighNs: int64(1000)<<(i+1) - 1, Count: int64(n)})
		}
		ta.Syncs = append(ta.Syncs, sc)
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
	if res != nil && res.CostNote != "" {
		c.Detail += "; " + res.CostNote
	}
	return c
}
