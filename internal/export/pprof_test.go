package export

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

func sampleTotals(p *profile.Profile) map[string]int64 {
	tot := map[string]int64{}
	for _, s := range p.Sample {
		for i, st := range p.SampleType {
			tot[st.Type] += s.Value[i]
		}
	}
	return tot
}

func TestPprofParsesBack(t *testing.T) {
	run := stackRun()
	b, err := Pprof(run)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("not gzipped: starts % x", b[:min(len(b), 4)])
	}
	p, err := profile.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, st := range p.SampleType {
		types = append(types, st.Type+"/"+st.Unit)
	}
	if got, want := strings.Join(types, " "), "samples/count cpu/nanoseconds sleeps/count offcpu/nanoseconds"; got != want {
		t.Errorf("sample types %q, want %q", got, want)
	}
	if p.DefaultSampleType != "cpu" || p.Period != 10_000_000 || p.PeriodType == nil || p.PeriodType.Type != "cpu" {
		t.Errorf("default %q, period %d %v; want cpu, 10ms of cpu", p.DefaultSampleType, p.Period, p.PeriodType)
	}
	if p.DurationNanos != 2e9 || p.TimeNanos != run.StartedAt.UnixNano() {
		t.Errorf("time %d, duration %d; want the record's start and window", p.TimeNanos, p.DurationNanos)
	}
	want := map[string]int64{"samples": 100, "cpu": 100 * 10_000_000, "sleeps": 509, "offcpu": 1250000400 + 350000000 + 400 + 2000000}
	if got := sampleTotals(p); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("totals %v, want %v", got, want)
	}
	if len(p.Sample) != len(run.TimeAccounting.OnCPU)+len(run.TimeAccounting.OffCPU) {
		t.Errorf("%d samples, want one per stack of the record", len(p.Sample))
	}
	// One function per (symbol, file): 8 kernel, 8 user, and [no stack];
	// one location per distinct frame text.
	if len(p.Function) != 17 || len(p.Location) != 22 {
		t.Errorf("%d functions and %d locations, want 17 and 22", len(p.Function), len(p.Location))
	}
	files := map[string]bool{}
	for _, m := range p.Mapping {
		files[m.File] = true
		if !m.HasFunctions {
			t.Errorf("mapping %s: HasFunctions false would make pprof look for the binary", m.File)
		}
	}
	if p.Mapping[0].File != "app" || len(p.Mapping) != 4 || !files[kernelFile] || !files["libweird so.1"] || !files["libc.so.6"] {
		t.Errorf("mappings %v, want app first, then the kernel and both libraries", files)
	}

	// The first on-CPU stack, leaf first: kernel frames, then user.
	s := p.Sample[0]
	var names []string
	for _, l := range s.Location {
		names = append(names, l.Line[0].Function.Name+"@"+l.Mapping.File)
	}
	wantNames := "copy_user_generic@[kernel.kallsyms] vfs_write@[kernel.kallsyms] crc32@app save@app main@app _start@app"
	if strings.Join(names, " ") != wantNames {
		t.Errorf("first stack %q, want %q", strings.Join(names, " "), wantNames)
	}
	if s.Label["thread"][0] != hostileComm || s.Label["process"][0] != "app" || s.Label["category"][0] != "cpu" ||
		s.NumLabel["pid"][0] != 100 || s.NumLabel["tid"][0] != 101 {
		t.Errorf("labels %v %v", s.Label, s.NumLabel)
	}
	last := p.Sample[len(p.Sample)-1]
	if last.Label["category"][0] != "sleep" || last.Label["thread"][0] != "tid-201" || last.Label["process"][0] != "pid-200" ||
		len(last.Location) != 1 || last.Location[0].Line[0].Function.Name != noStackFrame {
		t.Errorf("stackless sample: labels %v, locations %d", last.Label, len(last.Location))
	}
	// Unresolved frames keep their address.
	for _, l := range p.Location {
		if fn := l.Line[0].Function.Name; strings.HasPrefix(fn, "0x") && fmt.Sprintf("%#x", l.Address) != fn {
			t.Errorf("unresolved frame %s has address %#x", fn, l.Address)
		}
	}
}

func TestPprofOffCPUOnly(t *testing.T) {
	run := loadTestdata(t, "observe-detail")
	b, err := Pprof(run)
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.SampleType) != 2 || p.DefaultSampleType != "offcpu" {
		t.Errorf("sample types %v, default %q: want sleeps and offcpu only", p.SampleType, p.DefaultSampleType)
	}
	var ns, n int64
	for _, s := range run.TimeAccounting.OffCPU {
		ns += int64(math.Round(s.Seconds * 1e9))
		n += s.Count
	}
	if got := sampleTotals(p); got["offcpu"] != ns || got["sleeps"] != n {
		t.Errorf("totals %v, want offcpu %d, sleeps %d", got, ns, n)
	}
}

func TestPprofNeedsStacks(t *testing.T) {
	for _, name := range []string{"bench-sqlite", "observe-sqlite", "observe-fileio"} {
		b, err := Pprof(loadTestdata(t, name))
		if err == nil || b != nil {
			t.Errorf("%s: no error (%d bytes)", name, len(b))
			continue
		}
		if !strings.Contains(err.Error(), "record with `perfsleuth observe --stacks`") {
			t.Errorf("%s: error %q does not say how to get stacks", name, err)
		}
	}
}

// goTool runs `go tool pprof` on the profile, the consumer the format is for.
func goTool(t *testing.T, args ...string) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.Command(gobin, append([]string{"tool", "pprof"}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("go tool pprof %v: %v\n%s", args, err, errb.String())
	}
	return out.String()
}

// topRow returns the first row of `pprof -top`: its flat value and name.
func topRow(t *testing.T, out string) (flat, name string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.Contains(l, "flat%") && i+1 < len(lines) {
			f := strings.Fields(lines[i+1])
			if len(f) >= 6 {
				return f[0], strings.Join(f[5:], " ")
			}
		}
	}
	t.Fatalf("no rows in:\n%s", out)
	return "", ""
}

func TestGoToolPprofReadsIt(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "stacks.pb.gz")
	b, err := Pprof(stackRun())
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, b); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		index, total, flat, top string
	}{
		// 50 samples at 100 Hz in the frame with ';' and a space in its name.
		{"cpu", "Total samples = 1000000000ns", "500000000ns", "hash;mix it"},
		{"offcpu", "Total samples = 1602000800ns", "1250000400ns", "io_schedule"},
	}
	for _, c := range cases {
		out := goTool(t, "-top", "-unit=ns", "-sample_index="+c.index, path)
		if !strings.Contains(out, c.total) {
			t.Errorf("%s: want %q in:\n%s", c.index, c.total, out)
		}
		if flat, name := topRow(t, out); flat != c.flat || name != c.top {
			t.Errorf("%s: top row %s %q, want %s %q", c.index, flat, name, c.flat, c.top)
		}
		if !strings.Contains(out, "File: app") {
			t.Errorf("%s: want the workload's binary as the profile's file:\n%s", c.index, out)
		}
	}
	// Tags let pprof split by thread, even one whose name has ';' in it.
	out := goTool(t, "-tags", "-sample_index=samples", path)
	if !strings.Contains(out, hostileComm) || !strings.Contains(out, "category") {
		t.Errorf("-tags does not list the thread %q:\n%s", hostileComm, out)
	}
}

// frameFunction strips "+0xoff" and " (file)" from a record's frame.
var frameSuffix = regexp.MustCompile(`\+0x[0-9a-f]+( \(.*\))?$`)

// On a real record, pprof's hottest function is the innermost frame that
// holds the most off-CPU time, and its total is the record's.
func TestGoToolPprofOnRealRecord(t *testing.T) {
	run := loadTestdata(t, "observe-detail")
	flat := map[string]int64{}
	var total int64
	for _, s := range run.TimeAccounting.OffCPU {
		ns := int64(math.Round(s.Seconds * 1e9))
		total += ns
		leaf := noStackFrame
		if len(s.Kernel) > 0 {
			leaf = s.Kernel[0]
		} else if len(s.User) > 0 {
			leaf = s.User[0]
		}
		flat[frameSuffix.ReplaceAllString(leaf, "")] += ns
	}
	var top string
	for fn, ns := range flat {
		if top == "" || ns > flat[top] {
			top = fn
		}
	}
	path := filepath.Join(t.TempDir(), "offcpu.pb.gz")
	b, err := Pprof(run)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := goTool(t, "-top", "-unit=ns", path)
	if want := fmt.Sprintf("Total samples = %dns", total); !strings.Contains(out, want) {
		t.Errorf("want %q in:\n%s", want, out)
	}
	if f, name := topRow(t, out); name != top || f != fmt.Sprintf("%dns", flat[top]) {
		t.Errorf("top row %s %s, want %dns %s", f, name, flat[top], top)
	}
}

// A record with on-CPU stacks but no frequency (not written today) still
// gives CPU time, from the stacks' seconds.
func TestPprofWithoutFrequency(t *testing.T) {
	run := stackRun()
	run.TimeAccounting.OnCPUHz = 0
	run.TimeAccounting.OffCPU = nil
	b, err := Pprof(run)
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if got := sampleTotals(p); got["cpu"] != 1e9 || got["samples"] != 100 {
		t.Errorf("totals %v, want 1s of cpu in 100 samples", got)
	}
	if p.PeriodType != nil && p.PeriodType.Type != "" {
		t.Errorf("period type %v without a frequency", p.PeriodType)
	}
}

// Stacks that count nothing give an error, not a profile of nothing.
func TestPprofOfNothing(t *testing.T) {
	run := stackRun()
	for i := range run.TimeAccounting.OnCPU {
		run.TimeAccounting.OnCPU[i].Samples = 0
	}
	run.TimeAccounting.OffCPU = nil
	if b, err := Pprof(run); err == nil {
		t.Errorf("no error, %d bytes", len(b))
	}
}

// On a real record with both kinds of stacks, pprof's totals are the
// record's samples and off-CPU time, and its hottest on-CPU function the
// innermost frame with the most samples.
func TestGoToolPprofOnRealOnCPURecord(t *testing.T) {
	run := loadTestdata(t, "observe-stacks")
	flat := map[string]int64{}
	var samples, offNs int64
	for _, s := range run.TimeAccounting.OnCPU {
		samples += s.Samples
		leaf := noStackFrame
		if len(s.Kernel) > 0 {
			leaf = s.Kernel[0]
		} else if len(s.User) > 0 {
			leaf = s.User[0]
		}
		flat[frameSuffix.ReplaceAllString(leaf, "")] += s.Samples
	}
	for _, s := range run.TimeAccounting.OffCPU {
		offNs += int64(math.Round(s.Seconds * 1e9))
	}
	var most int64
	for _, n := range flat {
		most = max(most, n)
	}
	path := filepath.Join(t.TempDir(), "stacks.pb.gz")
	b, err := Pprof(run)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, b); err != nil {
		t.Fatal(err)
	}
	out := goTool(t, "-top", "-sample_index=samples", path)
	if want := fmt.Sprintf("Total samples = %d", samples); !strings.Contains(out, want) {
		t.Errorf("want %q in:\n%s", want, out)
	}
	// Ties are ordered by pprof; any function with the most samples will do.
	if f, name := topRow(t, out); f != fmt.Sprint(most) || flat[name] != most {
		t.Errorf("top row %s %q, want a function with %d samples of %v", f, name, most, flat)
	}
	out = goTool(t, "-top", "-unit=ns", "-sample_index=offcpu", path)
	if want := fmt.Sprintf("Total samples = %dns", offNs); !strings.Contains(out, want) {
		t.Errorf("want %q in:\n%s", want, out)
	}
}
