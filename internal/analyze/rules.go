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
	{"cpu.contended", cpuContended},
	{"cpu.wakeup_latency", cpuWakeupLatency},
	{"cpu.steal", cpuSteal},
	{"cpu.kernel_path", cpuKernelPath},
	{"threads.churn", threadsChurn},
	{"syscall.tiny_io", tinyIO},
	{"io.random_small", ioRandomSmall},
	{"cache.miss_heavy", cacheMissHeavy},
	{"writeback.throttled", writebackThrottled},
	{"device.saturated", deviceSaturated},
	{"device.queue_shallow", deviceQueueShallow},
	{"device.discards", deviceDiscards},
	{"storage.write_amplification", writeAmplification},
	{"sqlite.journal_overhead", sqliteJournalOverhead},
	{"sqlite.index_write_amplification", sqliteIndexWriteAmplification},
	{"observer.overhead_high", overheadHigh},
}
