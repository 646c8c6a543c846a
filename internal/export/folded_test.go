package export

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// foldedLine is one parsed line, split as flamegraph.pl and speedscope
// split it: at the last space, then at every ';'.
type foldedLine struct {
	frames []string
	count  int64
}

func parseFolded(t *testing.T, b []byte) []foldedLine {
	t.Helper()
	s := string(b)
	if !strings.HasSuffix(s, "\n") {
		t.Fatalf("folded output does not end in a newline: %q", s)
	}
	var out []foldedLine
	for i, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		sp := strings.LastIndexByte(l, ' ')
		if sp <= 0 || strings.ContainsAny(l[:sp], " \t\r") {
			t.Fatalf("line %d: want one space before the count: %q", i+1, l)
		}
		n, err := strconv.ParseInt(l[sp+1:], 10, 64)
		if err != nil || n <= 0 {
			t.Fatalf("line %d: count %q is not a positive integer", i+1, l[sp+1:])
		}
		frames := strings.Split(l[:sp], ";")
		for _, f := range frames {
			if f == "" {
				t.Fatalf("line %d has an empty frame: %q", i+1, l)
			}
		}
		out = append(out, foldedLine{frames, n})
	}
	return out
}

func TestFoldedOnCPU(t *testing.T) {
	b, err := FoldedOnCPU(stackRun())
	if err != nil {
		t.Fatal(err)
	}
	// Process and thread first, then user frames outermost first, then
	// kernel frames (_[k]) on top; offsets dropped, so the first two
	// stacks are one line; ';' and spaces in names replaced.
	want := `app;app;do_idle_[k];[unknown]_[k] 8
app;db_worker:1;_start;main;[libc.so.6];hash:mix_it 50
app;db_worker:1;_start;main;save;crc32;vfs_write_[k];copy_user_generic_[k] 42
`
	if string(b) != want {
		t.Errorf("got:\n%s\nwant:\n%s", b, want)
	}
	var total int64
	for _, l := range parseFolded(t, b) {
		total += l.count
	}
	if total != 100 {
		t.Errorf("counts add up to %d samples, the record has 100", total)
	}
}

func TestFoldedOffCPU(t *testing.T) {
	b, err := FoldedOffCPU(stackRun())
	if err != nil {
		t.Fatal(err)
	}
	// Microseconds, rounded; the category after the process; a thread the
	// record has no comm for by its ids; the 0.4 µs stack merged into the
	// 2 ms one with the same (empty) stack.
	want := `app;sleep;db_worker:1;_start;main;nanosleep;hrtimer_nanosleep_[k] 350000
app;storage-sync;db_worker:1;_start;main;save;fdatasync;do_fsync_[k];ext4_sync_file_[k];io_schedule_[k] 1250000
pid-200;sleep;tid-201;[no_stack] 2000
`
	if string(b) != want {
		t.Errorf("got:\n%s\nwant:\n%s", b, want)
	}
}

// The off-CPU stacks of a real record (sqlite observed with --stacks):
// every line parses, the category follows the process, and the
// microseconds add up to the record's seconds.
func TestFoldedOffCPURealRecord(t *testing.T) {
	run := loadTestdata(t, "observe-detail")
	b, err := FoldedOffCPU(run)
	if err != nil {
		t.Fatal(err)
	}
	lines := parseFolded(t, b)
	var wantUs, gotUs int64
	perCat := map[string]int64{}
	for _, s := range run.TimeAccounting.OffCPU {
		us := int64(math.Round(s.Seconds * 1e6))
		wantUs += us
		perCat[s.Category] += us
	}
	for _, l := range lines {
		gotUs += l.count
		if len(l.frames) < 4 {
			t.Fatalf("want process;category;thread;frames, got %q", l.frames)
		}
		perCat[l.frames[1]] -= l.count
	}
	if gotUs != wantUs {
		t.Errorf("lines add up to %d µs, the record's stacks to %d µs", gotUs, wantUs)
	}
	for c, left := range perCat {
		if left != 0 {
			t.Errorf("category %s: %d µs in the record not in the lines", c, left)
		}
	}
	// The hottest stack of the record: fdatasync into a flush, the
	// kernel's innermost frame last.
	top := run.TimeAccounting.OffCPU[0]
	found := false
	for _, l := range lines {
		if l.frames[1] == top.Category && l.frames[len(l.frames)-1] == "schedule_timeout_[k]" && l.frames[3] == "fdatasync" {
			found = true
		}
	}
	if !found {
		t.Errorf("no line for the record's hottest stack (%s, fdatasync ... schedule_timeout):\n%s", top.Category, b)
	}
}

func TestFoldedMissingStacksAreErrors(t *testing.T) {
	procfs := stackRun()
	procfs.TimeAccounting = &model.TimeAccounting{Source: "procfs"}
	noted := stackRun()
	noted.TimeAccounting.OnCPU = nil
	noted.TimeAccounting.OnCPUNote = "perf_event_open: permission denied"
	cases := []struct {
		name   string
		run    *model.Run
		render func(*model.Run) ([]byte, error)
		want   string
	}{
		{"bench record, on-CPU", loadTestdata(t, "bench-sqlite"), FoldedOnCPU, "no time accounting, so no on-CPU stacks: record with `perfsleuth observe --stacks`"},
		{"bench record, off-CPU", loadTestdata(t, "bench-sqlite"), FoldedOffCPU, "no off-CPU stacks"},
		{"observed without --stacks", loadTestdata(t, "observe-sqlite"), FoldedOffCPU, "no off-CPU stacks: record with `perfsleuth observe --stacks`"},
		{"off-CPU stacks only", loadTestdata(t, "observe-detail"), FoldedOnCPU, "off-CPU stacks but no on-CPU samples"},
		{"procfs accounting", procfs, FoldedOnCPU, "came from procfs, which takes no stacks"},
		{"sampler note", noted, FoldedOnCPU, "no on-CPU stacks (perf_event_open: permission denied)"},
		{"empty record", &model.Run{}, FoldedOffCPU, "no time accounting"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := c.render(c.run)
			if err == nil {
				t.Fatalf("no error, output:\n%s", b)
			}
			if b != nil {
				t.Errorf("output with the error: %q", b)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
		})
	}
}

// A record whose stacks hold less than a microsecond in all gives an
// error rather than an empty file.
func TestFoldedOffCPUBelowOneMicrosecond(t *testing.T) {
	run := stackRun()
	run.TimeAccounting.OffCPU = run.TimeAccounting.OffCPU[2:3]
	if b, err := FoldedOffCPU(run); err == nil {
		t.Fatalf("no error, output %q", b)
	}
}

func TestFoldedName(t *testing.T) {
	for in, want := range map[string]string{
		"plain":          "plain",
		"a;b":            "a:b",
		"with space":     "with_space",
		"line\nbreak\r":  "line_break_",
		"tab\there":      "tab_here",
		"bell\x07":       "bell?",
		"bad\xffutf8":    "bad?utf8",
		"":               "[unknown]",
		"(*T).M·1 ünï":   "(*T).M·1_ünï",
		"nbsp\u00a0here": "nbsp_here",
	} {
		if got := foldedName(in); got != want {
			t.Errorf("foldedName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseFrame(t *testing.T) {
	cases := []struct {
		in     string
		kernel bool
		want   frame
	}{
		{"io_schedule+0x3e", true, frame{Function: "io_schedule", File: kernelFile, Resolved: true, Kernel: true}},
		{"0xffffffff81000010", true, frame{Function: "0xffffffff81000010", File: kernelFile, Addr: 0xffffffff81000010, Kernel: true}},
		{"fdatasync+0x3a (libc.so.6)", false, frame{Function: "fdatasync", File: "libc.so.6", Resolved: true}},
		{"main.(*T).run+0x1f (app)", false, frame{Function: "main.(*T).run", File: "app", Resolved: true}},
		{"0x7f0000001234 (libc.so.6)", false, frame{Function: "0x7f0000001234", File: "libc.so.6", Addr: 0x7f0000001234}},
		{"0x401000", false, frame{Function: "0x401000", Addr: 0x401000}},
		{"a+b+0xzz (x)", false, frame{Function: "a+b+0xzz", File: "x", Resolved: true}},
	}
	for _, c := range cases {
		if got := parseFrame(c.in, c.kernel); got != c.want {
			t.Errorf("parseFrame(%q) = %+v, want %+v", c.in, got, c.want)
		}
	}
}

// The on-CPU samples of a real record (the fileio benchmark observed with
// --stacks): the counts add up, every stack starts at the process and its
// thread, and the kernel frames sit on top of the user frames.
func TestFoldedOnCPURealRecord(t *testing.T) {
	run := loadTestdata(t, "observe-stacks")
	b, err := FoldedOnCPU(run)
	if err != nil {
		t.Fatal(err)
	}
	var want, got int64
	for _, s := range run.TimeAccounting.OnCPU {
		want += s.Samples
	}
	sawKernel := false
	for _, l := range parseFolded(t, b) {
		got += l.count
		if l.frames[0] != "perfsleuth" || len(l.frames) < 3 {
			t.Errorf("stack does not start with the process and a thread: %q", l.frames)
		}
		inKernel := false
		for _, f := range l.frames[2:] {
			k := strings.HasSuffix(f, kernelSuffix)
			if inKernel && !k {
				t.Errorf("user frame %s above a kernel frame: %q", f, l.frames)
			}
			inKernel = inKernel || k
		}
		sawKernel = sawKernel || inKernel
	}
	if got != want || want == 0 {
		t.Errorf("lines add up to %d samples, the record has %d", got, want)
	}
	if !sawKernel {
		t.Error("no kernel frame in a benchmark that writes and syncs")
	}
}
