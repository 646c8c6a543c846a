package timeacct

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/proctree"
)

// The kernel keeps its own per-thread accounting: /proc/PID/task/TID/
// schedstat holds the time a thread ran and the time it waited on a run
// queue, in ns. Read for the workload's threads when the probe starts and
// when it stops, its change over the window is what the accounting's cpu
// and cpu-wait must agree with, thread by thread (analyze's
// perfsleuth.inconsistent says when they do not).

// schedstat is one thread's reading.
type schedstat struct {
	pid, tid      int
	runNs, waitNs uint64
}

// readSchedstats reads the schedstat of every thread of the trees below
// roots.
func readSchedstats(roots []int) map[int]schedstat {
	out := map[int]schedstat{}
	for _, root := range roots {
		below, _ := proctree.Descendants("/proc", root)
		for _, pid := range append(below, root) {
			dir := filepath.Join("/proc", strconv.Itoa(pid), "task")
			tasks, err := os.ReadDir(dir)
			if err != nil {
				continue
			}
			for _, t := range tasks {
				tid, err := strconv.Atoi(t.Name())
				if err != nil {
					continue
				}
				b, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
				if err != nil {
					continue
				}
				f := strings.Fields(string(b))
				if len(f) < 2 {
					continue
				}
				run, err1 := strconv.ParseUint(f[0], 10, 64)
				wait, err2 := strconv.ParseUint(f[1], 10, 64)
				if err1 == nil && err2 == nil {
					out[tid] = schedstat{pid: pid, tid: tid, runNs: run, waitNs: wait}
				}
			}
		}
	}
	return out
}

// kernelAgreement sets the accounting's cpu and cpu-wait beside the
// kernel's schedstat, over the threads read at both ends of the window (an
// exited thread's last reading, a zombie leader's, is its final one).
func kernelAgreement(ta *model.TimeAccounting, start, end map[int]schedstat) *model.KernelAgreement {
	if len(start) == 0 || len(end) == 0 {
		return &model.KernelAgreement{Notes: []string{"schedstat could not be read (kernel.sched_schedstats off, or no /proc): cpu and cpu-wait not compared with the kernel's"}}
	}
	// The time on or queued for a CPU must agree. Its split need not: a
	// thread woken on an idle CPU waits for it to leave its idle state,
	// which perfsleuth counts as cpu-wait (from the wake-up to the switch
	// in) and schedstat mostly as run time (its run queue clock is not kept
	// up to date in idle): a sync loop read cpu 0.36s, cpu-wait 0.15s here
	// where schedstat had 0.51s and 0.007s, the same 0.51s in all.
	both := model.KernelCheck{What: "cpu + cpu-wait", Source: "schedstat", Judged: true}
	cpu := model.KernelCheck{What: "cpu", Source: "schedstat"}
	wait := model.KernelCheck{What: "cpu-wait", Source: "schedstat"}
	for _, t := range ta.Threads {
		if t.TID == 0 {
			continue
		}
		a, ok1 := start[t.TID]
		b, ok2 := end[t.TID]
		if !ok1 || !ok2 || a.pid != t.PID || b.runNs < a.runNs || b.waitNs < a.waitNs {
			continue
		}
		cpu.Threads++
		wait.Threads++
		both.Threads++
		cpu.PerfsleuthSec += t.Seconds[model.CatCPU]
		cpu.KernelSec += float64(b.runNs-a.runNs) / 1e9
		wait.PerfsleuthSec += t.Seconds[model.CatCPUWait]
		wait.KernelSec += float64(b.waitNs-a.waitNs) / 1e9
	}
	both.PerfsleuthSec, both.KernelSec = cpu.PerfsleuthSec+wait.PerfsleuthSec, cpu.KernelSec+wait.KernelSec
	k := &model.KernelAgreement{Checks: []model.KernelCheck{both, cpu, wait},
		Notes: []string{"cpu and cpu-wait are judged together: a thread woken on an idle CPU waits for it to leave its idle state, which perfsleuth counts as cpu-wait and schedstat mostly as run time",
			"storage waits are not compared with delay accounting: it counts the waits in io_schedule only (not a sync's wait for the journal's commit), which is not what storage-* measures"}}
	if cpu.Threads == 0 {
		k.Checks = nil
		k.Notes = append(k.Notes, "no thread was alive at both ends of the window to compare with schedstat")
	}
	return k
}
