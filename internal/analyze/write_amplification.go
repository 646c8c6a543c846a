package analyze

import (
	"fmt"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// storage.write_amplification: the device wrote for the workload's files
// (its own write requests and the writeback of its pages) many times what
// its write calls asked. Redis with appendfsync always: 318 MiB written
// for 6.7 MiB of AOF, ~47x, and nothing said so. Small appends each
// followed by a sync write the whole block they touched again at every
// sync, and each sync commits the file system's journal beside it. Fires
// at ampRatio or more, with at least ampMinWritten written (a few blocks
// of metadata make any tiny run look amplified). The asked bytes are the
// write calls' (rchar's twin wchar, which counts writes to pipes and
// sockets too, so the ratio is a lower bound), or the files' with
// --storage, plus asynchronous writes.
const (
	ampRatio      = 4
	ampMinWritten = 4 << 20
)

func writeAmplification(run *model.Run) *model.Finding {
	st := run.Storage
	if st == nil {
		return nil
	}
	var written, others int64
	for _, d := range st.Devices {
		for _, o := range d.Ops {
			if o.Op == "write" {
				written += o.WorkloadBytes + o.WritebackBytes
				others += o.Bytes - o.WorkloadBytes - o.WritebackBytes
			}
		}
	}
	asked, what := int64(0), ""
	var calls int64
	if st.FilesTraced && len(st.Files) > 0 {
		for _, f := range st.Files {
			asked += f.Writes.Bytes
			calls += f.Writes.Count
		}
		what = "its write calls to files asked"
	} else if o := run.Observation; o != nil {
		asked, calls = o.Totals.Process.WChar, o.Totals.Process.SyscW
		what = "its write calls asked (wchar: writes to pipes and sockets too)"
	}
	for _, a := range st.AsyncIO {
		asked += a.WriteBytes
		calls += a.Writes
	}
	if asked <= 0 || written < ampMinWritten || float64(written) < ampRatio*float64(asked) {
		return nil
	}
	ratio := float64(written) / float64(asked)
	ev := []string{fmt.Sprintf("the device wrote %s for the workload's files (its own requests and their writeback) for %s %s: %.0fx",
		units.FormatSize(written), units.FormatSize(asked), what, ratio)}
	if calls > 0 {
		mean := float64(asked) / float64(calls)
		line := fmt.Sprintf("its writes averaged %s", units.FormatSize(int64(mean)))
		if mean < 4096 {
			line += ": smaller than a block, so each one dirties a whole page, written again in full at each writeback or sync"
		}
		ev = append(ev, line)
	}
	if syncs := syncCount(run.TimeAccounting); syncs > 0 && calls > 0 {
		ev = append(ev, fmt.Sprintf("%s sync calls for %s writes: each sync writes the blocks written since the last one, and commits the journal beside them",
			units.FormatCount(syncs), units.FormatCount(calls)))
	}
	if others > 0 {
		ev = append(ev, fmt.Sprintf("meanwhile %s was written by others (the file system's journal commit thread, other processes): not counted above", units.FormatSize(others)))
	}
	ev = append(ev, "batch writes before syncing (group commit; Redis: appendfsync everysec), write whole blocks, or preallocate and overwrite in place")
	f := &model.Finding{
		Severity: "info",
		Summary:  fmt.Sprintf("the device wrote %.0fx the bytes the workload asked to write", ratio),
		Evidence: ev,
		Test:     &model.FindingTest{Name: "bytes written per byte asked", Value: ratio, Op: ">=", Threshold: ampRatio},
	}
	if ta := run.TimeAccounting; attributesStorage(ta) {
		s := share(ta, model.CatStorageWrite) + share(ta, model.CatStorageSync)
		f.Share = &s
		if s >= materialShare {
			f.Severity = "warning"
		}
	}
	return f
}

// syncCount is the sync calls the accounting timed.
func syncCount(ta *model.TimeAccounting) int64 {
	if ta == nil {
		return 0
	}
	var n int64
	for _, s := range ta.Syncs {
		n += s.Count
	}
	return n
}
