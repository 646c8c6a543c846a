package analyze

import (
	"fmt"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// device.discards: the device was made to discard (TRIM) rather than
// write. A file system mounted with the discard option trims the blocks
// it frees as it frees them, one request per extent, in the journal's
// commit: rm -rf of 20k files made 20,201 discards and no writes, and read
// as "storage-write" with a deeper queue offered as the remedy. Fires at
// discardMinRequests discards or more that took discardTimeShare of the
// window, or outnumbered the writes. A warning when the workload's
// storage waits are a material share of its time.
const (
	discardMinRequests = 100
	discardTimeShare   = 0.10
)

func deviceDiscards(run *model.Run) *model.Finding {
	st := run.Storage
	if st == nil {
		return nil
	}
	w := window(run)
	var ev []string
	var total, writesTotal int64
	var busyTotal float64
	for _, d := range st.Devices {
		var disc, writes model.BlockOp
		for _, o := range d.Ops {
			switch o.Op {
			case "discard":
				disc = o
			case "write":
				writes = o
			}
		}
		if disc.Requests < discardMinRequests {
			continue
		}
		busy := float64(disc.Requests) * disc.LatencyMeanSec
		if !(w > 0 && busy >= discardTimeShare*w) && disc.Requests < writes.Requests {
			continue
		}
		total += disc.Requests
		writesTotal += writes.Requests
		busyTotal += busy
		ev = append(ev, fmt.Sprintf("%s: %s discards (%s), %s each on average, %s of request time, against %s writes",
			devName(d), units.FormatCount(disc.Requests), units.FormatSize(disc.Bytes), units.FormatNs(disc.LatencyMeanSec*1e9),
			units.FormatNs(busy*1e9), units.FormatCount(writes.Requests)))
	}
	if total == 0 {
		return nil
	}
	mount := ""
	if s := run.Host.Storage; s != nil {
		mount = s.MountOptions
	}
	if strings.Contains(","+mount+",", ",discard,") {
		ev = append(ev, "the file system is mounted with discard ("+mount+"): it trims the blocks it frees soon after it frees them, one request per freed extent (ext4: after each journal commit), beside the workload's IO",
			"mount it without discard and trim in batches instead (fstrim, fstrim.timer weekly): fewer, larger discards, off the workload's path")
	} else {
		ev = append(ev, "the file system is not mounted with discard: the discards come from the workload (BLKDISCARD, fallocate with PUNCH_HOLE) or from fstrim running meanwhile",
			"fewer, larger discards (punch holes in bigger ranges), or trim outside the workload's run")
	}
	f := &model.Finding{
		Severity: "info",
		Summary:  discardSummary(total, writesTotal, busyTotal, w),
		Evidence: ev,
		Test:     &model.FindingTest{Name: "discard requests", Value: float64(total), Op: ">=", Threshold: discardMinRequests},
	}
	if ta := run.TimeAccounting; attributesStorage(ta) {
		s := share(ta, model.CatStorageWrite) + share(ta, model.CatStorageSync) + share(ta, model.CatOther)
		f.Share = &s
		if s >= materialShare {
			f.Severity = "warning"
		}
	}
	return f
}

// discardSummary says which of the two tests the discards passed: their
// request time's share of the window, or their count against the writes'.
func discardSummary(discards, writes int64, busy, window float64) string {
	if window > 0 && busy >= discardTimeShare*window {
		return fmt.Sprintf("discards (TRIM) took %.0f%% of the window in request time: %s discards", busy/window*100, units.FormatCount(discards))
	}
	return fmt.Sprintf("the device was made to discard more often than to write: %s discards, %s writes", units.FormatCount(discards), units.FormatCount(writes))
}
