package timeacct

import (
	"fmt"
	"strings"
)

// Costs are the measured CPU cost of one run of each program (indexed by
// Prog*): UntrackedNs when it concerns no thread of the tree (the filter
// only), TrackedNs when it does. Zero means not measured.
type Costs struct {
	UntrackedNs, TrackedNs [NumPrograms]float64
	// Syscalls and Stacks are the Config the costs were measured with: the
	// programs differ with them.
	Syscalls, Stacks bool
}

// Estimate multiplies run counts by the costs. The note names the programs
// that ran but whose cost was not measured (left out of the estimate).
func (c *Costs) Estimate(runs, tracked [NumPrograms]uint64) (ns uint64, note string) {
	var total float64
	var missing []string
	for i := range NumPrograms {
		if i == ProgSample {
			continue // its runs are hrtimer_expire_entry's, costed in ProgCtx
		}
		un := float64(runs[i] - min(tracked[i], runs[i]))
		tr := float64(tracked[i])
		if un > 0 && c.UntrackedNs[i] == 0 || tr > 0 && c.TrackedNs[i] == 0 {
			missing = append(missing, ProgramNames[i])
		}
		total += un*c.UntrackedNs[i] + tr*c.TrackedNs[i]
	}
	if len(missing) > 0 {
		note = fmt.Sprintf("the estimate leaves out %s: their cost was not calibrated", strings.Join(missing, ", "))
	}
	return uint64(total), note
}
