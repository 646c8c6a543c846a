package compare

import (
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// work is what one record's run did: how many units of work in how long.
// Counts are compared per unit of work, so that a run that did more of the
// same work does not look different for it.
type work struct {
	units float64
	// unit names one unit: "transaction", "op" (a read or a write), or
	// "run" for a command, whose work is the whole run.
	unit string
	// sec is the measured phase's wall time (a command's: exec to exit).
	sec float64
}

// workOf is the record's own run's work; ok is false without a result.
func workOf(r *model.Run) (work, bool) {
	res := r.Result
	if res == nil {
		return work{}, false
	}
	switch {
	case res.SQLite != nil:
		var tx int64
		var sec float64
		for _, p := range res.SQLite.Phases {
			tx += p.Transactions
			sec += p.DurationSec
		}
		return work{float64(tx), "transaction", sec}, tx > 0 && sec > 0
	case res.FileIO != nil:
		var n int64
		for _, op := range res.FileIO.Ops {
			if op.Op == "read" || op.Op == "write" {
				n += op.Count
			}
		}
		return work{float64(n), "op", res.DurationSec}, n > 0 && res.DurationSec > 0
	case res.Command != nil:
		return work{1, "run", res.Command.WallSec}, res.Command.WallSec > 0
	}
	return work{}, false
}

// pairWork is the two runs' work in one unit: per unit of work when both
// did the same kind of unit, otherwise per second of the measured phase.
func pairWork(a, b *model.Run) (wa, wb work, ok bool) {
	wa, okA := workOf(a)
	wb, okB := workOf(b)
	if !okA || !okB {
		return wa, wb, false
	}
	if wa.unit != wb.unit {
		wa = work{wa.sec, "second", wa.sec}
		wb = work{wb.sec, "second", wb.sec}
	}
	return wa, wb, true
}

// busySeconds is the busy threads' accounted time, summed in a fixed order
// so that the same record gives the same bits every time.
func busySeconds(ta *model.TimeAccounting) float64 {
	keys := slices.Sorted(maps.Keys(ta.Total))
	sum := 0.0
	for _, k := range keys {
		sum += ta.Total[k]
	}
	return sum
}

func share(ta *model.TimeAccounting, cat string) float64 {
	if b := busySeconds(ta); b > 0 {
		return ta.Total[cat] / b
	}
	return 0
}

// busyThreads counts the threads the accounting did not call idle.
func busyThreads(ta *model.TimeAccounting) int {
	n := 0
	for _, t := range ta.Threads {
		if !t.Idle {
			n++
		}
	}
	return n
}

// atOnce is how many busy threads ran (or waited) at once on average: their
// accounted seconds over the window.
func atOnce(ta *model.TimeAccounting) float64 {
	if ta.WindowSec <= 0 {
		return 0
	}
	return busySeconds(ta) / ta.WindowSec
}

// syncsTimed is true when the record timed every sync call (eBPF); a
// record without sync calls then made none.
func syncsTimed(r *model.Run) bool {
	ta := r.TimeAccounting
	return ta != nil && ta.Source == "ebpf" && ta.SyncNote == ""
}

// syncTotals sums all kinds of sync call.
func syncTotals(ta *model.TimeAccounting) (count int64, sec float64) {
	for _, s := range ta.Syncs {
		count += s.Count
		sec += s.TotalSec
	}
	return count, sec
}

func syncOf(ta *model.TimeAccounting, kind string) model.SyncCalls {
	for _, s := range ta.Syncs {
		if s.Kind == kind {
			return s
		}
	}
	return model.SyncCalls{Kind: kind}
}

// device is the block device of a record that carried the workload's
// requests: the disk under its files when the storage probe saw it,
// otherwise the one with most of the workload's requests.
func device(r *model.Run) *model.BlockDevice {
	if r.Storage == nil || len(r.Storage.Devices) == 0 {
		return nil
	}
	if st := r.Host.Storage; st != nil {
		for _, disk := range st.Disks {
			for i := range r.Storage.Devices {
				if r.Storage.Devices[i].Name == disk {
					return &r.Storage.Devices[i]
				}
			}
		}
	}
	best, most := -1, int64(-1)
	for i, d := range r.Storage.Devices {
		var n int64
		for _, op := range d.Ops {
			n += op.WorkloadRequests + op.WritebackRequests
		}
		if n > most {
			best, most = i, n
		}
	}
	return &r.Storage.Devices[best]
}

func blockOp(d *model.BlockDevice, op string) (model.BlockOp, bool) {
	if d == nil {
		return model.BlockOp{}, false
	}
	for _, o := range d.Ops {
		if o.Op == op {
			return o, true
		}
	}
	return model.BlockOp{}, false
}

// ratio is the larger of x/y and y/x: how many times apart two positive
// numbers are; +Inf when one of them is 0 and the other is not.
func ratio(x, y float64) float64 {
	switch {
	case x == y:
		return 1
	case x <= 0 || y <= 0:
		return math.Inf(1)
	}
	return math.Max(x/y, y/x)
}

func size(n int64) string { return strings.ReplaceAll(units.FormatSize(n), " ", "") }
