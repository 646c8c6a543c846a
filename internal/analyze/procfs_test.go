package analyze

import (
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

const (
	offText      = "storage waits unknown: kernel.task_delayacct=0; sudo sysctl -w kernel.task_delayacct=1"
	splitText    = "delay accounting keeps one block-IO wait per thread"
	cpuWaitText  = "cpu-wait"
	noRecordText = "the record does not say whether delay accounting was on"
)

// TestFromObservationSplit: each thread's window is cpu, cpu-wait, the
// block-IO wait where it is known to be reads, and unknown, in that order,
// clamped so that they add up to the window; Unknown says what is missing.
func TestFromObservationSplit(t *testing.T) {
	const window = 10.0
	reads := &model.ThreadIO{ReadBytes: 1 << 20}
	writes := &model.ThreadIO{WriteBytes: 1 << 20}
	for _, tc := range []struct {
		name      string
		delayAcct string
		th        model.ThreadUse
		want      map[string]float64 // exactly these categories
		has, not  []string           // texts in (not in) Unknown
	}{{
		name: "delay accounting off: cpu and cpu-wait known, storage unknown", delayAcct: model.DelayAcctOff,
		th:   model.ThreadUse{UserSec: 3, SystemSec: 1, SchedStat: true, RunDelaySec: 2},
		want: map[string]float64{"cpu": 4, "cpu-wait": 2, "unknown": 4},
		has:  []string{offText}, not: []string{cpuWaitText, splitText},
	}, {
		name: "delay accounting off: a block-IO delay is not trusted", delayAcct: model.DelayAcctOff,
		th:   model.ThreadUse{UserSec: 1, SchedStat: true, RunDelaySec: 1, IODelaySec: 5, IO: reads},
		want: map[string]float64{"cpu": 1, "cpu-wait": 1, "unknown": 8},
		has:  []string{offText},
	}, {
		// A kernel that dequeues sleepers late charges block-IO delays
		// from a stale start: 1,396 s in a 0.28 s run was seen.
		name: "delay accounting unreliable: a block-IO delay is not trusted", delayAcct: model.DelayAcctUnreliable,
		th:   model.ThreadUse{UserSec: 1, SchedStat: true, RunDelaySec: 1, IODelaySec: 5, IO: reads},
		want: map[string]float64{"cpu": 1, "cpu-wait": 1, "unknown": 8},
		has:  []string{"DELAY_DEQUEUE"}, not: []string{splitText},
	}, {
		name: "delay accounting on: a thread that only read waited for reads", delayAcct: model.DelayAcctOn,
		th:   model.ThreadUse{UserSec: 1, SchedStat: true, RunDelaySec: 0.5, IODelaySec: 6, IO: reads},
		want: map[string]float64{"cpu": 1, "cpu-wait": 0.5, "storage-read": 6, "unknown": 2.5},
		has:  []string{splitText}, not: []string{offText, " s in "},
	}, {
		name: "delay accounting on: a thread that wrote keeps its wait in unknown", delayAcct: model.DelayAcctOn,
		th:   model.ThreadUse{UserSec: 1, SchedStat: true, IODelaySec: 6, IO: writes},
		want: map[string]float64{"cpu": 1, "cpu-wait": 0, "unknown": 9},
		has:  []string{splitText, "(6.00 s in 1 thread)"},
	}, {
		name: "delay accounting on: reads and writes cannot be split", delayAcct: model.DelayAcctOn,
		th:   model.ThreadUse{UserSec: 1, SchedStat: true, IODelaySec: 3, IO: &model.ThreadIO{ReadBytes: 4096, WriteBytes: 4096}},
		want: map[string]float64{"cpu": 1, "cpu-wait": 0, "unknown": 9},
		has:  []string{"(3.00 s in 1 thread)"},
	}, {
		name: "delay accounting on: dropped dirty pages count as writing", delayAcct: model.DelayAcctOn,
		th:   model.ThreadUse{SchedStat: true, IODelaySec: 3, IO: &model.ThreadIO{ReadBytes: 4096, CancelledWriteBytes: 4096}},
		want: map[string]float64{"cpu": 0, "cpu-wait": 0, "unknown": 10},
		has:  []string{"(3.00 s in 1 thread)"},
	}, {
		name: "delay accounting on: io not read says nothing", delayAcct: model.DelayAcctOn,
		th:   model.ThreadUse{UserSec: 2, SchedStat: true, IODelaySec: 1},
		want: map[string]float64{"cpu": 2, "cpu-wait": 0, "unknown": 8},
		has:  []string{"(1.00 s in 1 thread)"},
	}, {
		name: "no schedstat: cpu-wait is unknown", delayAcct: model.DelayAcctOff,
		th:   model.ThreadUse{UserSec: 2, RunDelaySec: 3},
		want: map[string]float64{"cpu": 2, "unknown": 8},
		has:  []string{"cpu-wait (time runnable, waiting for a CPU)", offText},
	}, {
		name: "ticks overshoot: cpu first, then cpu-wait, then storage, never negative", delayAcct: model.DelayAcctOn,
		th:   model.ThreadUse{UserSec: 6, SystemSec: 0.05, SchedStat: true, RunDelaySec: 4, IODelaySec: 2, IO: reads},
		want: map[string]float64{"cpu": 6.05, "cpu-wait": 3.95, "storage-read": 0, "unknown": 0},
	}, {
		name: "cpu alone above the window", delayAcct: model.DelayAcctOff,
		th:   model.ThreadUse{UserSec: 10.02, SchedStat: true, RunDelaySec: 1},
		want: map[string]float64{"cpu": 10, "cpu-wait": 0, "unknown": 0},
	}, {
		name: "no delay accounting in the kernel", delayAcct: model.DelayAcctUnavailable,
		th:   model.ThreadUse{UserSec: 1, SchedStat: true},
		want: map[string]float64{"cpu": 1, "cpu-wait": 0, "unknown": 9},
		has:  []string{"no kernel.task_delayacct sysctl"},
	}, {
		name: "delay accounting switched during the window", delayAcct: model.DelayAcctChanged,
		th:   model.ThreadUse{UserSec: 1, SchedStat: true, IODelaySec: 4, IO: reads},
		want: map[string]float64{"cpu": 1, "cpu-wait": 0, "unknown": 9},
		has:  []string{"switched during the window"},
	}, {
		name: "a record from before delay accounting was recorded", delayAcct: "",
		th:   model.ThreadUse{UserSec: 1, SystemSec: 2},
		want: map[string]float64{"cpu": 3, "unknown": 7},
		has:  []string{noRecordText, "cpu-wait (time runnable"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tc.th.PID, tc.th.TID, tc.th.Comm = 1, 2, "t"
			r := &model.Run{Observation: &model.Observation{DurationSec: window, DelayAcct: tc.delayAcct,
				Totals: model.Totals{Threads: []model.ThreadUse{tc.th}}}}
			FromObservation(r)
			ta := r.TimeAccounting
			if ta == nil || ta.Source != "procfs" || ta.WindowSec != window || len(ta.Threads) != 1 {
				t.Fatalf("accounting %+v", ta)
			}
			got := ta.Threads[0]
			if !slices.Equal(slices.Sorted(maps.Keys(got.Seconds)), slices.Sorted(maps.Keys(tc.want))) {
				t.Errorf("categories %v, want %v", got.Seconds, tc.want)
			}
			sum := 0.0
			for c, s := range got.Seconds {
				sum += s
				if s < 0 {
					t.Errorf("%s is negative: %v", c, s)
				}
				if math.Abs(s-tc.want[c]) > 1e-9 {
					t.Errorf("%s = %v, want %v", c, s, tc.want[c])
				}
			}
			if math.Abs(sum-window) > 1e-9 || got.WallSec != window {
				t.Errorf("categories add up to %v, wall %v; want the window, %v", sum, got.WallSec, window)
			}
			all := strings.Join(ta.Unknown, "\n")
			for _, s := range tc.has {
				if !strings.Contains(all, s) {
					t.Errorf("unknown list lacks %q:\n%s", s, all)
				}
			}
			for _, s := range tc.not {
				if strings.Contains(all, s) {
					t.Errorf("unknown list has %q:\n%s", s, all)
				}
			}
		})
	}
}

// TestFromObservationCountsUnsplitWaits: the Unknown list totals the
// block-IO waits left unsplit over threads, and names the threads without
// schedstat when only some lack it.
func TestFromObservationCountsUnsplitWaits(t *testing.T) {
	r := &model.Run{Observation: &model.Observation{DurationSec: 4, DelayAcct: model.DelayAcctOn, Totals: model.Totals{Threads: []model.ThreadUse{
		{TID: 1, SchedStat: true, IODelaySec: 1.5, IO: &model.ThreadIO{WriteBytes: 1}},
		{TID: 2, SchedStat: true, IODelaySec: 0.25},
		{TID: 3, IODelaySec: 2, IO: &model.ThreadIO{ReadBytes: 1}},
	}}}}
	FromObservation(r)
	all := strings.Join(r.TimeAccounting.Unknown, "\n")
	for _, s := range []string{"(1.75 s in 2 threads)", "cpu-wait for 1 of 3 threads"} {
		if !strings.Contains(all, s) {
			t.Errorf("unknown list lacks %q:\n%s", s, all)
		}
	}
	if got := r.TimeAccounting.Threads[2].Seconds["storage-read"]; got != 2 {
		t.Errorf("reader's storage-read %v, want 2", got)
	}
}
