package analyze

import (
	"fmt"
	"math"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// activitySums: the time by activity and state (activity.go) holds the
// busy threads' time, no more and no less: its cells add up to their
// total, its cpu column to their cpu, its critical-path column to the
// critical path; and each thread's cpu time by activity (from the on-CPU
// samples) adds up to its cpu time. Held to the tolerances of
// accountingSums.
func activitySums(ta *model.TimeAccounting) []string {
	if ta == nil {
		return nil
	}
	var out []string
	differ := func(a, b float64) bool {
		return math.Abs(a-b) > max(sumToleranceSec, sumToleranceFrac*max(math.Abs(a), math.Abs(b)))
	}
	bad := 0
	for _, t := range ta.Threads {
		if t.CPUByActivity == nil {
			continue
		}
		sum := 0.0
		for _, s := range t.CPUByActivity {
			sum += s
		}
		if differ(sum, t.Seconds[model.CatCPU]) {
			if bad < 3 {
				out = append(out, fmt.Sprintf("thread %s (tid %d): its cpu by activity adds up to %s, its cpu is %s", t.Comm, t.TID,
					units.FormatNs(sum*1e9), units.FormatNs(t.Seconds[model.CatCPU]*1e9)))
			}
			bad++
		}
	}
	if bad > 3 {
		out = append(out, fmt.Sprintf("and %d more threads whose cpu by activity does not add up to their cpu", bad-3))
	}
	if ta.Matrix == nil {
		return out
	}
	var all, cpu, crit float64
	for _, m := range ta.Matrix {
		all += m.Seconds
		crit += m.CriticalSec
		if m.State == model.StateCPU {
			cpu += m.Seconds
		}
	}
	if busy := busySeconds(ta); differ(all, busy) {
		out = append(out, fmt.Sprintf("the time by activity and state adds up to %s, the busy threads' time is %s", units.FormatNs(all*1e9), units.FormatNs(busy*1e9)))
	}
	if differ(cpu, ta.Total[model.CatCPU]) {
		out = append(out, fmt.Sprintf("the time by activity and state has %s on a CPU, the busy threads' cpu is %s", units.FormatNs(cpu*1e9), units.FormatNs(ta.Total[model.CatCPU]*1e9)))
	}
	if cp := criticalSeconds(ta); ta.CriticalPath != nil && differ(crit, cp) {
		out = append(out, fmt.Sprintf("the time by activity and state has %s on the critical path, the critical path is %s", units.FormatNs(crit*1e9), units.FormatNs(cp*1e9)))
	}
	return out
}
