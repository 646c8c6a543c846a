package analyze

import (
	"fmt"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// Tiny IO: read or write calls that move less than a disk sector (512 bytes)
// on average pay a whole syscall (and, for writes to a file, a page-cache
// lookup and inode update) per few bytes. At ~1-2 µs per call, 10,000
// calls/s cost 1-2% of a CPU: from there the overhead shows. (SQLite's
// 16-byte change-counter reads, ~2 per transaction, stay well below.)
const (
	tinyIOBytes       = 512
	tinyIOCallsPerSec = 10000
)

func tinyIO(run *model.Run) *model.Finding {
	o := run.Observation
	if o == nil || o.DurationSec <= 0 {
		return nil
	}
	p := o.Totals.Process
	var ev []string
	var test *model.FindingTest
	check := func(what string, calls, bytes int64) {
		if calls == 0 {
			return
		}
		rate, avg := float64(calls)/o.DurationSec, float64(bytes)/float64(calls)
		if rate >= tinyIOCallsPerSec && avg < tinyIOBytes {
			ev = append(ev, fmt.Sprintf("%s %s calls/s of %.0f bytes on average", units.FormatCount(int64(rate)), what, avg))
			if test == nil {
				test = &model.FindingTest{Name: fmt.Sprintf("%s calls per second, of under %d bytes on average", what, tinyIOBytes),
					Value: rate, Op: ">=", Threshold: tinyIOCallsPerSec}
			}
		}
	}
	check("read", p.SyscR, p.RChar)
	check("write", p.SyscW, p.WChar)
	if len(ev) == 0 {
		return nil
	}
	f := &model.Finding{Severity: "info", Summary: "many tiny reads or writes", Test: test}
	// What they cost: the busy threads' time on a CPU inside read and
	// write calls (the per-call overhead larger calls would share out; a
	// call's wait for data, on a pipe or a socket, is not its size's
	// fault). A warning when that is a material share of their time;
	// unknown without the on-CPU samples that split the CPU time by
	// activity, and then worth knowing, no more.
	if ta := run.TimeAccounting; ta != nil {
		if cpu, ok := busyCPUIn(ta, "read", "write"); ok {
			s := cpu / busySeconds(ta)
			f.Share = &s
			ev = append(ev, fmt.Sprintf("on a CPU inside read and write calls: %.3fs, %.1f%% of %.3fs busy-thread time", cpu, s*100, busySeconds(ta)))
			if s >= materialShare {
				f.Severity = "warning"
			}
		}
	}
	if f.Share == nil {
		ev = append(ev, "what the calls cost is not known: the cpu time is not split by activity here (no eBPF on-CPU samples)")
	}
	f.Evidence = append(ev, "buffer in user space and issue fewer, larger calls")
	return f
}
