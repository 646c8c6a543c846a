package procfs

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

type fakeThread struct {
	tid                        int
	start, utime, stime, blkio uint64
	vol, invol                 uint64
	noStatus                   bool // vanished between its stat and status reads
}

type fakeProc struct {
	pid, ppid                    int
	start                        uint64
	utime, stime, cutime, cstime uint64
	wchar                        uint64
	threads                      []fakeThread
}

func statLine(pid int, comm string, ppid int, start, utime, stime, cutime, cstime, blkio uint64) string {
	f := make([]string, 53)
	for i := range f {
		f[i] = "0"
	}
	f[1], f[2], f[3], f[4] = strconv.Itoa(pid), "("+comm+")", "S", strconv.Itoa(ppid)
	f[14], f[15], f[16], f[17] = fmt.Sprint(utime), fmt.Sprint(stime), fmt.Sprint(cutime), fmt.Sprint(cstime)
	f[22], f[42] = fmt.Sprint(start), fmt.Sprint(blkio)
	return strings.Join(f[1:], " ") + "\n"
}

// writeFakeProc replaces the process directories under root with procs.
func writeFakeProc(t *testing.T, root string, procs []fakeProc) {
	t.Helper()
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			os.RemoveAll(filepath.Join(root, e.Name()))
		}
	}
	write := func(path, content string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range procs {
		dir := filepath.Join(root, strconv.Itoa(p.pid))
		write(filepath.Join(dir, "stat"), statLine(p.pid, "proc "+strconv.Itoa(p.pid), p.ppid, p.start, p.utime, p.stime, p.cutime, p.cstime, 0))
		write(filepath.Join(dir, "io"), fmt.Sprintf("rchar: 0\nwchar: %d\nsyscr: 0\nsyscw: %d\nread_bytes: 0\nwrite_bytes: 0\ncancelled_write_bytes: 0\n", p.wchar, p.wchar/10))
		threads := p.threads
		if threads == nil {
			threads = []fakeThread{{tid: p.pid, start: p.start, utime: p.utime, stime: p.stime}}
		}
		for _, th := range threads {
			tdir := filepath.Join(dir, "task", strconv.Itoa(th.tid))
			write(filepath.Join(tdir, "stat"), statLine(th.tid, "t"+strconv.Itoa(th.tid), p.ppid, th.start, th.utime, th.stime, 0, 0, th.blkio))
			if !th.noStatus {
				write(filepath.Join(tdir, "status"), fmt.Sprintf("Name:\tt\nState:\tS (sleeping)\nvoluntary_ctxt_switches:\t%d\nnonvoluntary_ctxt_switches:\t%d\n", th.vol, th.invol))
			}
		}
	}
}

// TestTreeAccounting walks the reaping scheme of the package comment through
// a fake /proc, round by round, with the figures worked out by hand.
func TestTreeAccounting(t *testing.T) {
	root := t.TempDir()
	tr, err := newTree(root, 100, nil, true, newReader(), func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	tr.startTicks = 1000
	type want struct {
		user   float64 // seconds
		wchar  int64
		procs  int
		vol    int64
		blkio  float64
		thread int
	}
	rounds := []struct {
		name  string
		procs []fakeProc
		want  want
	}{
		{"baseline", []fakeProc{
			{pid: 100, ppid: 1, start: 10, utime: 10, wchar: 1000, threads: []fakeThread{
				{tid: 100, start: 10, utime: 8, vol: 10, blkio: 3}, {tid: 110, start: 20, utime: 2, vol: 4}}},
			{pid: 101, ppid: 100, start: 30, utime: 5, wchar: 500},
			{pid: 200, ppid: 1, start: 5, utime: 99, wchar: 9999}, // not ours
		}, want{0, 0, 2, 0, 0, 3}},
		{"grow and a new grandchild", []fakeProc{
			{pid: 100, ppid: 1, start: 10, utime: 12, wchar: 1000, threads: []fakeThread{
				{tid: 100, start: 10, utime: 9, vol: 15, blkio: 5}, {tid: 110, start: 20, utime: 3, vol: 4}}},
			{pid: 101, ppid: 100, start: 30, utime: 25, wchar: 700},
			{pid: 102, ppid: 101, start: 1500, utime: 3, wchar: 50},
			{pid: 200, ppid: 1, start: 5, utime: 150, wchar: 99999},
			{pid: 201, ppid: 200, start: 1600, utime: 40}, // child of an outsider
		}, want{0.02 + 0.20 + 0.03, 200 + 50, 3, 5, 0.02, 4}},
		// 102 (utime 4 at the end) was reaped by 101, which (utime 27,
		// cutime 4) was reaped by 100, as was 103, born and gone between
		// samples (utime 7, wchar 40). 100: cutime 0 -> 38, wchar
		// 1000 -> 1000 + (720+60) + 40. Thread 110 exited; 100's status
		// vanished before it was read.
		{"children reaped", []fakeProc{
			{pid: 100, ppid: 1, start: 10, utime: 13, cutime: 38, wchar: 1820, threads: []fakeThread{
				{tid: 100, start: 10, utime: 10, vol: 99, blkio: 5, noStatus: true}}},
			{pid: 200, ppid: 1, start: 5, utime: 150},
		}, want{0.01 + (0.02 + 0.01 + 0.07), 20 + 10 + 40, 1, 0, 0, 1}},
		// The counters of 100 went backwards (must count as 0), and PID 101
		// is back as a new process. 100's status is readable again (vol 15 -> 20).
		{"reset and PID reuse", []fakeProc{
			{pid: 100, ppid: 1, start: 10, utime: 5, cutime: 38, wchar: 10, threads: []fakeThread{
				{tid: 100, start: 10, utime: 3, vol: 20}}},
			{pid: 101, ppid: 100, start: 2000, utime: 2, wchar: 30},
		}, want{0.02, 30, 2, 5, 0, 2}},
	}
	var total model.ProcessUse
	for _, r := range rounds {
		writeFakeProc(t, root, r.procs)
		use, err := tr.update()
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		total = addUse(total, use)
		t.Logf("%s: %+v", r.name, use)
		if math.Abs(use.UserSec-r.want.user) > 1e-9 || use.WChar != r.want.wchar || use.Processes != r.want.procs ||
			use.VolCtxSw != r.want.vol || math.Abs(use.IODelaySec-r.want.blkio) > 1e-9 || use.Threads != r.want.thread {
			t.Errorf("%s: user %.2f wchar %d processes %d vol %d blkio %.2f threads %d, want %+v",
				r.name, use.UserSec, use.WChar, use.Processes, use.VolCtxSw, use.IODelaySec, use.Threads, r.want)
		}
		if use.UserSec < 0 || use.WChar < 0 || use.VolCtxSw < 0 {
			t.Errorf("%s: negative delta %+v", r.name, use)
		}
	}
	threads := tr.threadUses()
	byTID := map[int]model.ThreadUse{}
	for _, th := range threads {
		byTID[th.TID] = th
		if th.PID == 200 || th.PID == 201 {
			t.Errorf("thread of outsider %d listed", th.PID)
		}
	}
	if th := byTID[110]; !th.Exited || th.UserSec != 0.01 || th.VolCtxSw != 0 {
		t.Errorf("thread 110: %+v, want exited with 0.01 s user", th)
	}
	if th := byTID[102]; !th.Exited || th.UserSec != 0.03 {
		t.Errorf("thread 102 (born in the window, then reaped): %+v", th)
	}
	if got := tr.processesSeen(); got != 4 {
		t.Errorf("processes seen %d, want 4 (100, 101, 102, the new 101)", got)
	}
}

func TestParseStat(t *testing.T) {
	line := statLine(4242, "my (odd) comm", 7, 1234, 11, 22, 33, 44, 55)
	st, err := parseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if string(st.comm) != "my (odd) comm" || st.ppid != 7 || st.utime != 11 || st.stime != 22 ||
		st.cutime != 33 || st.cstime != 44 || st.start != 1234 || st.blkio != 55 {
		t.Errorf("parseStat = %+v", st)
	}
	if _, err := parseStat([]byte("42 (x) S 1 2 3")); err == nil {
		t.Error("short stat line: no error")
	}
	if _, err := parseStat([]byte("garbage")); err == nil {
		t.Error("garbage: no error")
	}
}

func TestParseCtxSwitches(t *testing.T) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	v, iv, ok := parseCtxSwitches(b)
	if !ok || v == 0 && iv == 0 {
		t.Errorf("parseCtxSwitches(/proc/self/status) = %d %d %v", v, iv, ok)
	}
	v, iv, ok = parseCtxSwitches([]byte("Name:\tx\nvoluntary_ctxt_switches:\t17\nnonvoluntary_ctxt_switches:\t3\n"))
	if !ok || v != 17 || iv != 3 {
		t.Errorf("parseCtxSwitches = %d %d %v", v, iv, ok)
	}
}
