package rows

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/compare"
	"github.com/perfsleuth/perfsleuth/internal/model"
)

func TestListSaysHowManyMore(t *testing.T) {
	l := first([]int{1, 2, 3, 4}, 3)
	if len(l.Rows) != 3 || l.Total != 4 || l.More() != 1 {
		t.Errorf("first 3 of 4: %+v, more %d", l, l.More())
	}
	if l := first([]int{1}, 3); l.More() != 0 {
		t.Errorf("first 3 of 1: more %d, want 0", l.More())
	}
}

// TestSyncMeanWithoutCalls: the terminal divided by the count unguarded
// and would have printed a NaN mean for a kind with no calls.
func TestSyncMeanWithoutCalls(t *testing.T) {
	got := Syncs(&model.TimeAccounting{Syncs: []model.SyncCalls{{Kind: "fsync", TotalSec: 0}}})
	if len(got) != 1 || got[0].MeanSec != 0 || math.IsNaN(got[0].MeanSec) {
		t.Errorf("mean of no calls: %+v, want 0", got)
	}
}

// TestProcThreadsExitedOnlyAmongShown: the terminal footnoted "†" when a
// thread it did not list had exited.
func TestProcThreadsExitedOnlyAmongShown(t *testing.T) {
	ts := []model.ThreadUse{{TID: 1, UserSec: 2}, {TID: 2, UserSec: 1}, {TID: 3, Exited: true}}
	l, exited := ProcThreads(ts, 2)
	if exited || l.More() != 1 || l.Rows[0].TID != 1 {
		t.Errorf("top 2 of 3, the exited one left out: rows %+v, exited %v", l.Rows, exited)
	}
	if _, exited := ProcThreads(ts, 3); !exited {
		t.Error("the exited thread listed, but not marked")
	}
}

func TestTargetSettingsOfAProcess(t *testing.T) {
	set, dur := TargetSettings(model.Target{PID: &model.PIDConfig{PID: 7, Comm: "db", Cmdline: "db -x", DurationSec: 5}})
	var names []string
	for _, s := range set {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"pid", "comm", "cmdline"}) || dur == nil || *dur != 5 {
		t.Errorf("settings %v, duration %v; want pid, comm, cmdline, then the duration 5", names, dur)
	}
}

// TestBusyNeverNegative: idle and iowait rounded up past 100% made the
// terminal's timeline print a negative busy%.
func TestBusyNeverNegative(t *testing.T) {
	o := &model.Observation{IntervalSec: 1, Timeline: []model.Sample{
		{TSec: 1, CPUs: []model.CPUUse{{CPU: -1, Idle: 60.1, IOWait: 40}}},
		{TSec: 2, CPUs: []model.CPUUse{{CPU: -1, Idle: 50, IOWait: 10}}},
	}}
	s := Timeline(o)
	if s[0].Busy != 0 || s[1].Busy != 40 {
		t.Errorf("busy %v and %v, want 0 and 40", s[0].Busy, s[1].Busy)
	}
}

func TestTimelineRatesUseEachSamplesInterval(t *testing.T) {
	o := &model.Observation{IntervalSec: 0.5, Timeline: []model.Sample{
		{TSec: 0, Process: model.ProcessUse{UserSec: 0.1}},
		{TSec: 2, Process: model.ProcessUse{UserSec: 1, SystemSec: 1, VolCtxSw: 10}, Disks: []model.DiskUse{{Device: "a", UtilPct: 5}, {Device: "b", UtilPct: 9}}},
	}}
	s := Timeline(o)
	if s[0].DT != 0.5 || s[0].CPUs != 0.2 || s[0].Disk != "-" {
		t.Errorf("first sample: %+v, want the interval, 0.2 CPUs, no disk", s[0])
	}
	if s[1].DT != 2 || s[1].CPUs != 1 || s[1].VolPerSec != 5 || s[1].Disk != "b" {
		t.Errorf("second sample: %+v, want 2s, 1 CPU, 5 switches/s, disk b", s[1])
	}
}

// TestHeadlineChangeNeedsWords: the terminal wrote "B " with nothing after
// it for a headline without words.
func TestHeadlineChangeNeedsWords(t *testing.T) {
	for _, c := range []struct {
		h    compare.Headline
		want string
	}{
		{compare.Headline{Significance: compare.Significant, Words: "2.0x faster", Change: 1}, "B 2.0x faster (+100%)"},
		{compare.Headline{Significance: compare.NotSignificant, Words: "about the same"}, "B about the same"},
		{compare.Headline{Significance: compare.Unknown}, ""},
		{compare.Headline{Significance: compare.NotComparableMeasure, Words: "2.0x faster"}, ""},
	} {
		if got := HeadlineOf(c.h).Change; got != c.want {
			t.Errorf("%s %q: change %q, want %q", c.h.Significance, c.h.Words, got, c.want)
		}
	}
}

func TestHeadlineValuesInEachSidesUnit(t *testing.T) {
	noise := 0.04
	h := compare.Headline{Measure: model.Measure{Unit: "s"}, MeasureB: &model.Measure{Unit: "tx/s"},
		A: compare.Value{Median: 1.5, Runs: []float64{1.5, 1.4}, Noise: &noise}, B: compare.Value{Median: 250, Runs: []float64{250, 260}}}
	x := HeadlineOf(h)
	if x.MedianA != "1.5s" || x.MedianB != "250" || x.NoiseA != "±4%" || x.NoiseB != "unknown" {
		t.Errorf("medians %q %q, noise %q %q", x.MedianA, x.MedianB, x.NoiseA, x.NoiseB)
	}
	if len(x.Runs) != 2 || !slices.Equal(x.Runs[1].Runs, []string{"250", "260"}) {
		t.Errorf("runs %+v, want B's in its own unit", x.Runs)
	}
}

// TestHeadlineMachineSpeed: the canary's change shows only when timed.
func TestHeadlineMachineSpeed(t *testing.T) {
	if got := HeadlineOf(compare.Headline{}).Machine; got != "" {
		t.Errorf("no canary: machine %q, want none", got)
	}
	h := compare.Headline{Machine: &compare.MachineSpeed{Change: -0.13, Interval: [2]float64{-0.15, -0.11}}}
	if got, want := HeadlineOf(h).Machine, "a fixed CPU loop timed before each run: -13% in B's runs, interval [-15%, -11%]"; got != want {
		t.Errorf("machine %q, want %q", got, want)
	}
}

// TestFileMeanSizeKeepsItsFraction: the mean size is a float, so the
// terminal's KiB keep their decimal; the page truncates it to bytes.
func TestFileMeanSizeKeepsItsFraction(t *testing.T) {
	l := Files([]model.FileIO{{Path: "/f", Deleted: true, Writes: model.FileOps{Count: 3, Bytes: 10}}}, 5)
	f := l.Rows[0]
	if f.Path != "/f (deleted)" || f.Writes.MeanBytes != 10.0/3 || f.Reads.MeanBytes != 0 {
		t.Errorf("got %+v", f)
	}
}

func TestOffCPUGroupsInDisplayOrder(t *testing.T) {
	ta := &model.TimeAccounting{
		Threads: []model.ThreadTime{{TID: 2, Comm: "worker"}},
		OffCPU: []model.OffCPUStack{
			{TID: 2, Category: model.CatLock, Seconds: 3, Count: 1},
			{TID: 9, PID: 9, Category: "zzz", Seconds: 2, Count: 1},
			{TID: 2, Category: model.CatStorageSync, Seconds: 1.5, Count: 4},
			{TID: 2, Category: model.CatLock, Seconds: 1, Count: 2},
			{TID: 2, Category: model.CatLock, Seconds: 0.5, Count: 2},
		},
	}
	o := OffCPUOf(ta)
	var groups []string
	for _, g := range o.Groups {
		groups = append(groups, fmt.Sprintf("%s %g %d %d", g.Category, g.Seconds, g.Count, len(g.Stacks)))
	}
	want := []string{"storage-sync 1.5 4 1", "lock 4.5 5 3", "zzz 2 1 1"}
	if !slices.Equal(groups, want) {
		t.Errorf("groups %q, want %q", groups, want)
	}
	if o.Stacks[0].Comm != "worker" || o.Stacks[1].Comm != "pid 9" {
		t.Errorf("roots %q, %q; want the thread's comm, else its pid", o.Stacks[0].Comm, o.Stacks[1].Comm)
	}
	var longest []float64
	for _, s := range o.Longest(2) {
		longest = append(longest, s.Seconds)
	}
	if !slices.Equal(longest, []float64{3, 2, 1.5, 1}) {
		t.Errorf("longest two per category, in the record's order: %v", longest)
	}
}

func TestSyscallsSumTheThreads(t *testing.T) {
	ta := &model.TimeAccounting{Syscalls: []model.SyscallStat{
		{TID: 1, Name: "read", Count: 2, TotalSec: 1, MaxSec: 0.7, Buckets: []model.Bucket{{LowNs: 8, HighNs: 15, Count: 2}}},
		{TID: 2, Name: "write", Count: 1, TotalSec: 2, MaxSec: 2},
		{TID: 2, Name: "read", Count: 2, TotalSec: 1, MaxSec: 0.9, Errors: 1,
			Buckets: []model.Bucket{{LowNs: 16, HighNs: 31, Count: 1}, {LowNs: 8, HighNs: 15, Count: 1}}},
	}}
	l, counted := Syscalls(ta, 1)
	if !counted || l.Total != 2 || len(l.Rows) != 1 {
		t.Fatalf("counted %v, %d rows of %d; want the first of 2", counted, len(l.Rows), l.Total)
	}
	l, _ = Syscalls(ta, 2)
	r := l.Rows[1]
	if l.Rows[0].Name != "read" || l.Rows[0].TotalSec != l.Rows[1].TotalSec {
		t.Errorf("rows %+v: a tie in time sorts by name", l.Rows)
	}
	if r.Name != "write" || r.Pct != 50 {
		t.Errorf("write: %+v", r)
	}
	read := l.Rows[0]
	if read.Count != 4 || read.Errors != 1 || read.MaxSec != 0.9 || read.MeanSec != 0.5 ||
		!slices.Equal(read.Buckets, []model.Bucket{{LowNs: 8, HighNs: 15, Count: 3}, {LowNs: 16, HighNs: 31, Count: 1}}) {
		t.Errorf("read summed over threads: %+v", read)
	}
	if _, counted := Syscalls(&model.TimeAccounting{}, 5); counted {
		t.Error("a record without syscall counts: counted")
	}
}

func TestAccountingSharesOfTheTotal(t *testing.T) {
	ta := &model.TimeAccounting{
		Total:   map[string]float64{model.CatCPU: 3, model.CatLock: 1, model.CatUnknown: 0, model.CatSleep: 0},
		UserSec: 1, SystemSec: 3,
		Threads: []model.ThreadTime{{Idle: true}, {}, {}},
	}
	a := AccountingOf(ta)
	var cats []string
	for _, c := range a.Cats {
		cats = append(cats, fmt.Sprintf("%s %g", c.Name, c.Share))
	}
	if !slices.Equal(cats, []string{"cpu 0.75", "lock 0.25", "sleep 0"}) || a.Busy != 2 || a.Idle != 1 || !a.CPUSplit || a.CPUUser != 0.25 {
		t.Errorf("got %+v (cats %q)", a, cats)
	}
}

// TestKernelAgreementSaysWhatIsTakenOff: the line's figure is perfsleuth's
// less the uncharged time and the lag after the kernel ended runs, and it
// says both.
func TestKernelAgreementSaysWhatIsTakenOff(t *testing.T) {
	ta := &model.TimeAccounting{Kernel: &model.KernelAgreement{Checks: []model.KernelCheck{
		{What: "cpu + cpu-wait", Source: "schedstat", Threads: 2, PerfsleuthSec: 0.532, KernelSec: 0.470, Judged: true, UnchargedSec: 0.05, CutLagSec: 0.012},
	}}}
	got := KernelAgreement(ta)
	for _, want := range []string{"cpu + cpu-wait 470ms here, 470ms by schedstat, 0.0% apart", "less 50ms of steal or interrupt time and 12ms after the kernel had ended runs that blocked"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q: want %q in it", got, want)
		}
	}
}
