package analyze

import (
	"fmt"
	"sort"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// Random small file calls. 16 KiB or less on average counts as small:
// sysbench fileio's default block (--file-block-size=16384, the field case
// of its rndwr against seqwr) and InnoDB's page; fio's IOPS tests use 4 KiB.
// At these sizes the device's cost per request, not its bandwidth, sets the
// pace, and readahead and request merging, which serve sequential calls, do
// not help. 1000 calls: fewer cost little even at a millisecond each. 50%:
// the random small calls are most of the workload's file calls, not a side
// stream beside a sequential one.
const (
	randomSmallBytes = 16 << 10
	randomSmallCalls = 1000
	randomSmallShare = 0.5
)

func ioRandomSmall(run *model.Run) *model.Finding {
	s := run.Storage
	if s == nil || len(s.Files) == 0 {
		return nil
	}
	type stream struct {
		file         string
		op           string
		calls, bytes int64
	}
	var total, small int64
	var hits []stream
	for _, f := range s.Files {
		for _, st := range []struct {
			op  string
			ops model.FileOps
		}{{"reads", f.Reads}, {"writes", f.Writes}} {
			total += st.ops.Count
			if st.ops.Pattern == "random" && st.ops.Count > 0 && st.ops.Bytes <= randomSmallBytes*st.ops.Count {
				small += st.ops.Count
				hits = append(hits, stream{fileName(f), st.op, st.ops.Count, st.ops.Bytes})
			}
		}
	}
	if small < randomSmallCalls || float64(small) < randomSmallShare*float64(total) {
		return nil
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].calls > hits[j].calls })
	w := window(run)
	ev := []string{fmt.Sprintf("%s of %s file calls (%.0f%%) were random, of %s or less on average",
		units.FormatCount(small), units.FormatCount(total), float64(small)/float64(total)*100, units.FormatSize(randomSmallBytes))}
	for _, h := range hits[:min(3, len(hits))] {
		ev = append(ev, fmt.Sprintf("%s: %s random %s of %s on average%s",
			h.file, units.FormatCount(h.calls), h.op, units.FormatSize(h.bytes/h.calls), perSec(h.calls, w, units.FormatCount)))
	}
	ev = append(ev, "each call pays the device's per-request cost, and readahead and merging cannot help: make calls larger or sequential (batch neighbouring records, sort by offset), or keep the data in memory; fio with rw=randwrite against rw=write at this block size measures the gap on this device")
	return &model.Finding{
		Severity: "info",
		Summary:  fmt.Sprintf("%.0f%% of the file calls are random and small", float64(small)/float64(total)*100),
		Evidence: ev,
		Test:     &model.FindingTest{Name: "random calls of 16 KiB or less, share of file calls", Value: float64(small) / float64(total), Op: ">=", Threshold: randomSmallShare},
	}
}
