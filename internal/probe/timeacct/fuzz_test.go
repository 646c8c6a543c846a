package timeacct

import (
	"bytes"
	"fmt"
	"testing"
)

// FuzzPressure: the "some" total of a pressure file the kernel could
// write comes back, with or without the "full" line, and any other text
// never panics.
func FuzzPressure(f *testing.F) {
	f.Add(uint64(123), uint64(9), true, "some avg10=0.00")
	f.Add(uint64(0), uint64(0), false, "some total=x")
	f.Fuzz(func(t *testing.T, some, full uint64, withFull bool, junk string) {
		parsePSISome(junk)
		text := fmt.Sprintf("some avg10=1.00 avg60=0.50 avg300=0.10 total=%d\n", some)
		if withFull {
			text += fmt.Sprintf("full avg10=0.00 avg60=0.00 avg300=0.00 total=%d\n", full)
		}
		if got, ok := parsePSISome(text); !ok || got != some {
			t.Errorf("parsePSISome(%q) = %d %v, want %d", text, got, ok, some)
		}
	})
}

// FuzzSchedstat: a schedstat line parses back to its three counters; any
// other text never panics.
func FuzzSchedstat(f *testing.F) {
	f.Add(uint64(1e9), uint64(5e6), uint64(40), "1 2")
	f.Fuzz(func(t *testing.T, run, wait, runs uint64, junk string) {
		parseSchedstat(junk)
		line := fmt.Sprintf("%d %d %d\n", run, wait, runs)
		if a, b, c, ok := parseSchedstat(line); !ok || a != run || b != wait || c != runs {
			t.Errorf("parseSchedstat(%q) = %d %d %d %v", line, a, b, c, ok)
		}
	})
}

// FuzzKallsymsRanges: any kallsyms text gives at most maxRanges ranges,
// each non-empty and of a class, or an error; never a panic.
func FuzzKallsymsRanges(f *testing.F) {
	f.Add([]byte("ffffffff81000000 T rwsem_down_write_slowpath\nffffffff81000100 t tick_nohz_handler\nffffffff81000200 T next\n"))
	f.Add([]byte("0000000000000000 T mutex_lock\n"))
	f.Add([]byte("ffffffffffffff00 T mutex_lock\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, _, err := parseKallsyms(bytes.NewReader(data))
		if err != nil {
			return
		}
		if len(rs) > maxRanges {
			t.Errorf("%d ranges", len(rs))
		}
		for _, r := range rs {
			if r.end <= r.start || r.class == classNone {
				t.Errorf("range %+v", r)
			}
		}
	})
}
