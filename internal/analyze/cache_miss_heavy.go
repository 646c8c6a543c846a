package analyze

import (
	"fmt"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// cacheHitRatioMin: below a 90% hit ratio one page in ten the workload reads
// through the page cache comes from the device, and a device read (about
// 100 µs on an SSD, 10 ms on a disk) costs a hundred times or more what
// copying a cached 4 KiB page does (about 1 µs), so that tenth outweighs
// the rest. (The storage probe's tests measure 1.0 for a warm re-read and
// 0.002 for a cold one.) cacheMinLookups: 1000 pages (4 MiB); fewer are a
// program's cold start, a few files read once.
const (
	cacheHitRatioMin = 0.9
	cacheMinLookups  = 1000
)

func cacheMissHeavy(run *model.Run) *model.Finding {
	if run.Storage == nil || run.Storage.Cache == nil {
		return nil
	}
	c := run.Storage.Cache
	if c.HitRatio < 0 || c.Lookups < cacheMinLookups || c.HitRatio >= cacheHitRatioMin {
		return nil
	}
	ev := []string{
		fmt.Sprintf("%s pages looked up by buffered reads, %s pages added to the cache during them: hit ratio %.2f",
			units.FormatCount(c.Lookups), units.FormatCount(c.ReadAdded), c.HitRatio),
		fmt.Sprintf("readahead: %s windows started by a miss, %s by reaching the previous window",
			units.FormatCount(c.ReadaheadSync), units.FormatCount(c.ReadaheadAsync)),
	}
	// The misses are a warning when reading from storage costs the
	// workload a material share of its time; otherwise they are worth
	// knowing, and no more. Regression: a hit ratio of 0.89 warned where
	// storage reads cost 0.1% of the time.
	sev := "info"
	var readShare *float64
	if ta := run.TimeAccounting; attributesStorage(ta) {
		r := share(ta, model.CatStorageRead)
		readShare = &r
		ev = append(ev, fmt.Sprintf("storage-read %.3fs of %.3fs busy-thread time (%.1f%%)",
			ta.Total[model.CatStorageRead], busySeconds(ta), r*100))
		if r >= materialShare {
			sev = "warning"
		}
	}
	ev = append(ev, "the data is not in, or not kept in, the page cache: a smaller working set or more memory for the cache helps; data read once is better read with direct IO or posix_fadvise(SEQUENTIAL or DONTNEED); a cold-cache experiment (perfsleuth diagnose) shows what the misses cost")
	return &model.Finding{
		Severity: sev,
		Summary:  fmt.Sprintf("buffered reads miss the page cache: hit ratio %.2f", c.HitRatio),
		Evidence: ev,
		Test:     &model.FindingTest{Name: "page-cache hit ratio", Value: c.HitRatio, Op: "<", Threshold: cacheHitRatioMin},
		Share:    readShare,
	}
}
