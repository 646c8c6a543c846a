package analyze

import "github.com/perfsleuth/perfsleuth/internal/model"

// FromObservation builds the time accounting the /proc observer allows when
// no eBPF accounting was made: each thread's cpu time (utime+stime), and the
// rest of the window as unknown, since /proc cannot tell storage waits,
// locks, sleep and run-queue waits apart. It does nothing when the run
// already has an accounting or has no observation.
func FromObservation(run *model.Run) {
	o := run.Observation
	if run.TimeAccounting != nil || o == nil || o.DurationSec <= 0 {
		return
	}
	ta := &model.TimeAccounting{
		Source:    "procfs",
		WindowSec: o.DurationSec,
		Unknown: []string{
			"why a thread was off the CPU (storage, locks, sleep and waiting for a CPU all show as unknown): run as root on a kernel with BTF for eBPF time accounting",
			"when threads that started or exited in the window lived: each is given the whole window",
		},
	}
	for _, th := range o.Totals.Threads {
		cpu := min(th.UserSec+th.SystemSec, o.DurationSec)
		ta.Threads = append(ta.Threads, model.ThreadTime{
			PID: th.PID, TID: th.TID, Comm: th.Comm, WallSec: o.DurationSec, Exited: th.Exited,
			UserSec: th.UserSec, SystemSec: th.SystemSec,
			Seconds: map[string]float64{model.CatCPU: cpu, model.CatUnknown: o.DurationSec - cpu},
		})
		if th.Exited {
			ta.ThreadsExited++
		}
	}
	run.TimeAccounting = ta
}
