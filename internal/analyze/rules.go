package analyze

import "github.com/perfsleuth/perfsleuth/internal/model"

// rule is one finding: its stable id (docs/findings.md) and a check that
// returns the finding, or nil when it does not apply. One file per rule.
type rule struct {
	id    string
	check func(run *model.Run) *model.Finding
}

// rules in the order they are reported at equal severity.
var rules = []rule{
	{"sync.dominant", syncDominant},
	{"lock.contention", lockContention},
	{"cpu.saturated", cpuSaturated},
	{"threads.churn", threadsChurn},
	{"syscall.tiny_io", tinyIO},
	{"observer.overhead_high", overheadHigh},
}
