package analyze

import (
	"fmt"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// Waiting for a CPU. cpuWaitShareWarning: runnable threads waiting for a
// CPU 10% of the time is the material share (materialChange) at which it
// changes the result; on an idle machine run-queue waits are microseconds,
// well under 1%. Why they wait decides the finding, and each is only
// called what its numbers show:
//
//   - cpu.saturated: the workload's own threads want more CPUs than there
//     are: on average more of them running or runnable than CPUs online.
//   - cpu.contended: they want fewer than there are, and the machine's CPUs
//     were busy anyway (idle under cpuIdleSpare): other tasks took them.
//   - cpu.wakeup_latency: they want fewer, and the CPUs sat idle: a woken
//     thread waited for a CPU to leave its idle state, to finish an
//     interrupt, or to be one it may run on (its affinity).
//
// cpuIdleSpare: 10% idle across the CPUs (of the observation's all-CPU
// time split, iowait counted as idle) is spare capacity a waiting thread
// could have had.
const (
	cpuWaitShareWarning = 0.10
	cpuIdleSpare        = 10.0
)

// cpuDemand is the workload's average number of threads running or
// runnable over the window.
func cpuDemand(ta *model.TimeAccounting) float64 {
	return (ta.Total[model.CatCPU] + ta.Total[model.CatCPUWait]) / ta.WindowSec
}

// machineCPU is the observation's all-CPU split, nil without one.
func machineCPU(run *model.Run) *model.CPUUse {
	if o := run.Observation; o != nil {
		for i := range o.Totals.CPUs {
			if o.Totals.CPUs[i].CPU == -1 {
				return &o.Totals.CPUs[i]
			}
		}
	}
	return nil
}

func cpuSaturated(run *model.Run) *model.Finding {
	ta := run.TimeAccounting
	cpus := run.Host.CPUsOnline
	if ta == nil || ta.WindowSec <= 0 || cpus == 0 {
		return nil
	}
	demand, s := cpuDemand(ta), share(ta, model.CatCPUWait)
	if demand <= float64(cpus) {
		return nil
	}
	// A warning when the waits for a CPU cost a material share of the
	// time: demand just over the CPUs, spread over many threads, makes
	// each wait a little, and is worth knowing, no more. Regression: it
	// warned with cpu-wait under 10% of the time, a warning whose cause
	// cost less than a warning's must.
	sev := "info"
	if s >= materialShare {
		sev = "warning"
	}
	return &model.Finding{
		Severity: sev,
		Summary:  fmt.Sprintf("more runnable threads than CPUs: on average %.2f of the workload's threads running or waiting to run, on %d CPUs", demand, cpus),
		Evidence: []string{
			fmt.Sprintf("they waited for a CPU %.0f%% of their time: cpu-wait %.3fs, cpu %.3fs", s*100, ta.Total[model.CatCPUWait], ta.Total[model.CatCPU]),
			"fewer busy threads than CPUs (a smaller pool), less CPU per unit of work, or more CPUs; a cpu-half experiment shows what CPUs are worth to it",
		},
		Test:  &model.FindingTest{Name: "threads running or runnable on average", Value: demand, Op: ">", Threshold: float64(cpus)},
		Share: &s,
	}
}

func cpuContended(run *model.Run) *model.Finding {
	ta, m := run.TimeAccounting, machineCPU(run)
	cpus := run.Host.CPUsOnline
	if ta == nil || ta.WindowSec <= 0 || cpus == 0 || m == nil {
		return nil
	}
	demand, s, idle := cpuDemand(ta), share(ta, model.CatCPUWait), m.Idle+m.IOWait
	if demand > float64(cpus) || s < cpuWaitShareWarning || idle >= cpuIdleSpare {
		return nil
	}
	return &model.Finding{
		Severity: "warning",
		Summary:  fmt.Sprintf("other tasks took the CPUs: the workload's threads waited for a CPU %.0f%% of their time on a machine %.0f%% busy", s*100, 100-idle),
		Evidence: []string{
			fmt.Sprintf("on average %.2f of the workload's threads running or waiting to run, on %d CPUs: it alone would fit", demand, cpus),
			fmt.Sprintf("the CPUs were idle %.1f%% of the window (user %.1f%%, system %.1f%%, irq %.1f%%, steal %.1f%%)", idle, m.User+m.Nice, m.System, m.IRQ+m.SoftIRQ, m.Steal),
			"run it where it has the CPUs to itself, or give it priority (nice, a cpu.weight in its cgroup); a cpu-contention experiment shows how much it feels",
		},
		Test:  &model.FindingTest{Name: "CPU idle %", Value: idle, Op: "<", Threshold: cpuIdleSpare},
		Share: &s,
	}
}

func cpuWakeupLatency(run *model.Run) *model.Finding {
	ta, m := run.TimeAccounting, machineCPU(run)
	cpus := run.Host.CPUsOnline
	if ta == nil || ta.WindowSec <= 0 || cpus == 0 || m == nil {
		return nil
	}
	demand, s, idle := cpuDemand(ta), share(ta, model.CatCPUWait), m.Idle+m.IOWait
	if demand > float64(cpus) || s < cpuWaitShareWarning || idle < cpuIdleSpare {
		return nil
	}
	return &model.Finding{
		Severity: "warning",
		Summary:  fmt.Sprintf("woken threads waited for a CPU %.0f%% of their time while the CPUs were idle %.0f%% of the window", s*100, idle),
		Evidence: []string{
			fmt.Sprintf("on average %.2f of the workload's threads running or waiting to run, on %d CPUs; cpu-wait %.3fs, cpu %.3fs", demand, cpus, ta.Total[model.CatCPUWait], ta.Total[model.CatCPU]),
			fmt.Sprintf("interrupts took %.1f%% of the CPUs, steal %.1f%%", m.IRQ+m.SoftIRQ, m.Steal),
			"likely causes: a CPU leaving a deep idle state on each wake-up (cpuidle; a lower latency limit in /dev/cpu_dma_latency helps), interrupts on the CPU the thread runs on, or an affinity that keeps it off the idle CPUs (taskset, cpusets)",
		},
		Test:  &model.FindingTest{Name: "CPU idle %", Value: idle, Op: ">=", Threshold: cpuIdleSpare},
		Share: &s,
	}
}
