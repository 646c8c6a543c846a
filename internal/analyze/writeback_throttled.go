package analyze

import (
	"fmt"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// throttleShare: dirty-page throttling pauses (balance_dirty_pages) that
// add up to 5% of the busy threads' time. Any pause means the workload
// dirtied pages faster than writeback cleaned them: below the midpoint
// between vm.dirty_background_ratio (10%) and vm.dirty_ratio (20%) the
// kernel does not pause a writer at all. 5% is half the 10% change the
// experiments call material (materialChange): worth a look before it is
// the bottleneck, while a few stray pauses of up to 200 ms (MAX_PAUSE,
// HZ/5 in mm/page-writeback.c) stay below it.
const throttleShare = 0.05

func writebackThrottled(run *model.Run) *model.Finding {
	if run.Storage == nil || run.Storage.Cache == nil {
		return nil
	}
	c := run.Storage.Cache
	// ThrottledSec is -1 when the kernel's HZ, which converts the pauses'
	// jiffies to seconds, is unknown.
	if c.Throttled <= 0 || c.ThrottledSec < 0 {
		return nil
	}
	base, of := 0.0, ""
	if ta := run.TimeAccounting; ta != nil && busySeconds(ta) > 0 {
		// Pauses add up over threads, as busy-thread time does.
		base, of = busySeconds(ta), "busy-thread time"
	} else if w := window(run); w > 0 {
		base, of = w, "the window"
	}
	if base == 0 || c.ThrottledSec < throttleShare*base {
		return nil
	}
	ev := []string{
		fmt.Sprintf("%s dirty-throttling pauses planned to last %.3fs, %.0f%% of %s (%.3fs)",
			units.FormatCount(c.Throttled), c.ThrottledSec, c.ThrottledSec/base*100, of, base),
		dirtiedLine(run, c),
	}
	if ta := run.TimeAccounting; attributesStorage(ta) {
		ev = append(ev, fmt.Sprintf("storage-write %.3fs of busy-thread time, which includes the pauses", ta.Total[model.CatStorageWrite]))
	}
	ev = append(ev, "the workload dirties pages faster than the device writes them back: write less (compress, avoid rewrites), start writeback early (sync_file_range), or use a faster device; raising vm.dirty_ratio only delays the pauses for bursts that fit in memory")
	// A warning once the pauses cost a material share of the time; worth
	// knowing from half of it.
	sh := c.ThrottledSec / base
	sev := "info"
	if sh >= materialShare {
		sev = "warning"
	}
	return &model.Finding{
		Severity: sev,
		Summary:  fmt.Sprintf("writes were paused by dirty-page throttling for %.0f%% of %s", sh*100, of),
		Evidence: ev,
		Test:     &model.FindingTest{Name: "dirty-throttling pauses, share of " + of, Value: sh, Op: ">=", Threshold: throttleShare},
		Share:    &sh,
	}
}

// dirtiedLine says how much the workload dirtied against what was written
// back for its files: pages as the storage probe counted them (--storage),
// else its processes' write_bytes of /proc/PID/io (pages dirtied and
// direct writes, in bytes).
func dirtiedLine(run *model.Run, c *model.PageCache) string {
	switch {
	case !c.PagesNotCounted:
		return fmt.Sprintf("%s pages dirtied, %s written back for the workload's files",
			units.FormatCount(c.Dirtied), units.FormatSize(c.WrittenBackBytes))
	case run.Observation != nil:
		return fmt.Sprintf("%s dirtied or written directly (/proc/PID/io write_bytes), %s written back for the workload's files",
			units.FormatSize(run.Observation.Totals.Process.WriteBytes), units.FormatSize(c.WrittenBackBytes))
	}
	return fmt.Sprintf("%s written back for the workload's files", units.FormatSize(c.WrittenBackBytes))
}
