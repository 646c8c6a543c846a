package procfs

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// FuzzParseStat: a stat line the kernel could write parses back to the
// numbers written, whatever comm holds; any other bytes give an error or
// fields, never a panic.
func FuzzParseStat(f *testing.F) {
	f.Add("perfsleuth", 1, uint64(12), uint64(3), uint64(0), uint64(0), uint64(98765), uint64(7))
	f.Add("a) b (c", 0, uint64(1)<<63, uint64(0), uint64(5), uint64(6), uint64(1), uint64(0))
	f.Add(") ) )", 2147483647, ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0))
	f.Add("kworker/u8:11-events_unbound", 2, uint64(0), uint64(0), uint64(0), uint64(0), uint64(0), uint64(0))
	f.Add("new\nline", 7, uint64(1), uint64(2), uint64(3), uint64(4), uint64(5), uint64(6))
	f.Fuzz(func(t *testing.T, comm string, ppid int, utime, stime, cutime, cstime, start, blkio uint64) {
		if strings.ContainsRune(comm, 0) || len(comm) > 64 || ppid < 0 || ppid > 1<<22 {
			t.Skip("not something the kernel writes")
		}
		want := taskStat{comm: []byte(comm), ppid: ppid, utime: utime, stime: stime, cutime: cutime, cstime: cstime, start: start, blkio: blkio}
		line := []byte(statLine(4242, comm, ppid, start, utime, stime, cutime, cstime, blkio))
		got, err := parseStat(line)
		if err != nil {
			t.Fatalf("parseStat(%q): %v", line, err)
		}
		if !bytes.Equal(got.comm, want.comm) {
			t.Errorf("comm %q, want %q", got.comm, want.comm)
		}
		got.comm, want.comm = nil, nil
		if !reflect.DeepEqual(got, want) {
			t.Errorf("parseStat(%q) = %+v, want %+v", line, got, want)
		}
		// Cut anywhere before field 22, the line is refused.
		if i := bytes.LastIndexByte(line, ')'); i >= 0 {
			short := line[:i+1+2*20]
			if _, err := parseStat(short); err == nil && bytes.Count(short[i:], []byte(" ")) < 20 {
				t.Errorf("parseStat(%q) of %d fields accepted", short, 2+bytes.Count(short[i:], []byte(" ")))
			}
		}
	})
}

// FuzzParseStatBytes: arbitrary bytes never panic, and an accepted line's
// comm is what lies between its first '(' and its last ')'.
func FuzzParseStatBytes(f *testing.F) {
	f.Add([]byte(statLine(1, "cat", 0, 5, 1, 0, 0, 0, 0)))
	f.Add([]byte("1 (x"))
	f.Add([]byte(")("))
	f.Add([]byte("1 (x) "))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := parseStat(b)
		if err != nil {
			return
		}
		l, r := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if !bytes.Equal(s.comm, b[l+1:r]) {
			t.Errorf("comm %q of %q", s.comm, b)
		}
	})
}

// FuzzParseCounters: the status, schedstat and io files' counters parse
// back to what the kernel wrote, in any order of the other lines, and
// arbitrary bytes never panic.
func FuzzParseCounters(f *testing.F) {
	f.Add(uint64(3), uint64(4), uint64(1), uint64(0), uint64(4096))
	f.Add(^uint64(0), uint64(0), ^uint64(0), ^uint64(0), uint64(0))
	f.Fuzz(func(t *testing.T, a, b, c, d, e uint64) {
		status := fmt.Sprintf("Name:\tx\nState:\tS (sleeping)\nvoluntary_ctxt_switches:\t%d\nnonvoluntary_ctxt_switches:\t%d\n", a, b)
		if vol, invol, ok := parseCtxSwitches([]byte(status)); !ok || vol != a || invol != b {
			t.Errorf("parseCtxSwitches(%q) = %d %d %v", status, vol, invol, ok)
		}
		sched := fmt.Sprintf("%d %d %d\n", a, b, c)
		if on, wait, ok := parseSchedstat([]byte(sched)); !ok || on != a || wait != b {
			t.Errorf("parseSchedstat(%q) = %d %d %v", sched, on, wait, ok)
		}
		io := fmt.Sprintf("rchar: %d\nwchar: %d\nsyscr: 1\nsyscw: 2\nread_bytes: %d\nwrite_bytes: %d\ncancelled_write_bytes: %d\n", a, b, c, d, e)
		got, ok := parseBlockIO([]byte(io))
		if want := (ioCounters{readBytes: c, writeBytes: d, cancelled: e}); !ok || got != want {
			t.Errorf("parseBlockIO(%q) = %+v %v, want %+v", io, got, ok, want)
		}
		for _, raw := range []string{status, sched, io} {
			for i := range len(raw) {
				parseCtxSwitches([]byte(raw[:i]))
				parseSchedstat([]byte(raw[:i]))
				parseBlockIO([]byte(raw[:i]))
			}
		}
	})
}
