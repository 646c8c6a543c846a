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
	check := func(what string, calls, bytes int64) {
		if calls == 0 {
			return
		}
		rate, avg := float64(calls)/o.DurationSec, float64(bytes)/float64(calls)
		if rate >= tinyIOCallsPerSec && avg < tinyIOBytes {
			ev = append(ev, fmt.Sprintf("%s %s calls/s of %.0f bytes on average", units.FormatCount(int64(rate)), what, avg))
		}
	}
	check("read", p.SyscR, p.RChar)
	check("write", p.SyscW, p.WChar)
	if len(ev) == 0 {
		return nil
	}
	ev = append(ev, "buffer in user space and issue fewer, larger calls")
	return &model.Finding{Severity: "warning", Summary: "many tiny reads or writes", Evidence: ev}
}
