package compare

import (
	"math"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

func TestHeadline(t *testing.T) {
	cases := []struct {
		name   string
		a, b   func() *model.Run
		edit   func(a, b *model.Run)
		sig    string
		change float64 // checked when not NaN
		words  string
		reason string // a part of the reason
	}{
		{name: "single runs: the noise is unknown", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) { setTime(b, 4, map[string]float64{model.CatCPU: 4}) },
			sig:  Unknown, change: -0.5, words: "is 2x slower", reason: "A and B are each a single run"},
		{name: "one side repeated", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) { withRepeats(a, 0.02, 500, 505, 495) },
			sig:  Unknown, change: 0, words: "performs the same", reason: "B is a single run"},
		{name: "repeats far apart", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) {
				withRepeats(a, 0.02, 500, 505, 495, 510, 490)
				withRepeats(b, 0.02, 250, 255, 245, 252, 248)
			},
			sig: Significant, change: -0.5, words: "is 2x slower", reason: "excludes zero"},
		{name: "repeats that overlap", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) {
				withRepeats(a, 0.3, 500, 600, 400, 550, 450)
				withRepeats(b, 0.3, 520, 620, 380, 560, 470)
			},
			sig: NotSignificant, reason: "reaches zero", change: math.NaN()},
		{name: "apart, but within one side's noise", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) {
				withRepeats(a, 0.05, 500, 505, 495, 510, 490)
				withRepeats(b, 0.40, 600, 605, 595, 610, 590)
			},
			sig: NotSignificant, change: 0.2, words: "is 20% faster", reason: "own runs move ±40%"},
		// Regression: two identical diagnose configurations made one after
		// the other came out 7% apart here, interval [-9%, -1%], beyond
		// both sides' noise (±6%, ±4%), and were called significant.
		{name: "apart and beyond the noise, but under the material change", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) {
				withRepeats(a, 0.02, 500, 505, 495, 510, 490)
				withRepeats(b, 0.02, 465, 470, 460, 468, 462)
			},
			sig: NotSignificant, change: -0.07, words: "is 7% slower", reason: "under the 10% that two batches of identical runs"},
		// Regression: A's five runs fell steadily (41,422 down to 33,461)
		// while B's did not, and two identical configurations were called
		// "B is 16% faster" (interval [+8%, +34%], as here). At the rate A
		// fell (Sen's slope, -4.3% a run), the middles of two batches of
		// five runs drift 21% apart: +16% can be that drift.
		{name: "one side's runs drift", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) {
				withRepeats(a, 0.15, 41422, 39310, 38698, 38314, 33461)
				withRepeats(b, 0.04, 44733, 45100, 44000, 44900, 44500)
			},
			sig: NotSignificant, change: 0.156, words: "is 16% faster",
			reason: "drifted within their batches (A -17% over its 5 runs, B -1% over its 5 runs, along Sen's slope): at that rate two batches made one after the other drift 21% apart"},
		// The same with two of A's runs swapped: Mann-Kendall's p is then
		// 0.08, no trend at the 5% level, but Sen's slope still says A fell
		// 14% over its batch, and the change is judged against that.
		{name: "one side's runs drift with one out of order", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) {
				withRepeats(a, 0.05, 41422, 38698, 39310, 38314, 33461)
				withRepeats(b, 0.04, 44733, 45100, 44000, 44900, 44500)
			},
			sig: NotSignificant, change: 0.156, reason: "A -14% over its 5 runs"},
		// A batch that drifted 8% is no reason to doubt a 2x change: it is
		// far beyond any drift between the batches at that rate.
		{name: "a change far beyond the drift within the batches", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) {
				withRepeats(a, 0.05, 520, 510, 500, 490, 480)
				withRepeats(b, 0.02, 250, 255, 245, 252, 248)
			},
			sig: Significant, change: -0.5, reason: "and twice the 10% the batches' own drift (A -8% over its 5 runs"},
		// Interleaved, the rounds pair up: the machine's speed moved 30%
		// from round to round, which the paired interval removes. B is 15%
		// faster in every round.
		{name: "interleaved runs are paired", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) {
				withRepeats(a, 0.2, 500, 650, 450, 600, 400)
				withRepeats(b, 0.2, 575, 747.5, 517.5, 690, 460)
				a.Experiments.Pair = &model.Pair{ID: "x", Side: "A"}
				b.Experiments.Pair = &model.Pair{ID: "x", Side: "B"}
			},
			sig: Significant, change: 0.15, words: "is 15% faster", reason: "excludes zero"},
		// Interleaved on a machine that slowed by 2% of its first speed a
		// run, A and B the same: each B run, set against A moved to its
		// place along A's own drift, is no change at all.
		{name: "interleaved runs over a drift", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) {
				at, bt := []int{1, 4, 5, 8, 9}, []int{2, 3, 6, 7, 10}
				var va, vb []float64
				for i := range at {
					va, vb = append(va, 1000*(1-0.02*float64(at[i]))), append(vb, 1000*(1-0.02*float64(bt[i])))
				}
				withRepeats(a, 0.2, va...)
				withRepeats(b, 0.2, vb...)
				for i := range at {
					a.Experiments.Conditions[0].Runs[i].Seq, b.Experiments.Conditions[0].Runs[i].Seq = at[i], bt[i]
				}
				a.Experiments.Pair = &model.Pair{ID: "x", Side: "A"}
				b.Experiments.Pair = &model.Pair{ID: "x", Side: "B"}
			},
			sig: NotSignificant, change: 0, words: "performs the same", reason: "reaches zero"},
		// Regression: two identical WAL sides, interleaved, came out "B is
		// 13% slower", interval [-23%, -9%], B's CPU time per transaction
		// 16% up: the machine, not B. With the canary timed before each
		// run 13% slower in B's runs too, the change is the machine's.
		{name: "interleaved, the machine slower in B's runs", a: sqliteRun, b: sqliteRun,
			edit: machineCase([]float64{1.40, 1.41, 1.39, 1.40, 1.42, 1.40, 1.38, 1.41}, []float64{1.61, 1.62, 1.60, 1.61, 1.63, 1.60, 1.59, 1.62}),
			sig:  NotSignificant, change: -0.13, words: "is 13% slower", reason: "but the machine itself was 13% slower during B's runs (a fixed CPU loop timed before each run"},
		// The same change with the machine steady stays a change.
		{name: "interleaved, the machine steady", a: sqliteRun, b: sqliteRun,
			edit: machineCase([]float64{1.40, 1.41, 1.39, 1.40, 1.42, 1.40, 1.38, 1.41}, []float64{1.41, 1.39, 1.40, 1.42, 1.40, 1.38, 1.41, 1.40}),
			sig:  Significant, change: -0.13, reason: "excludes zero"},
		// A machine faster during B's runs cannot have made B slower.
		{name: "interleaved, the machine faster in B's runs", a: sqliteRun, b: sqliteRun,
			edit: machineCase([]float64{1.61, 1.62, 1.60, 1.61, 1.63, 1.60, 1.59, 1.62}, []float64{1.40, 1.41, 1.39, 1.40, 1.42, 1.40, 1.38, 1.41}),
			sig:  Significant, change: -0.13, reason: "excludes zero"},
		{name: "the same runs unpaired span the drift", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) {
				withRepeats(a, 0.2, 500, 650, 450, 600, 400)
				withRepeats(b, 0.2, 575, 747.5, 517.5, 690, 460)
			},
			sig: NotSignificant, change: 0.15, reason: "reaches zero"},
		{name: "a command's wall time: lower is better", a: commandRun, b: commandRun,
			edit: func(a, b *model.Run) {
				withRepeats(a, 0.01, 10, 10.1, 9.9)
				withRepeats(b, 0.01, 5, 5.05, 4.95)
			},
			sig: Significant, change: 1, words: "is 2x faster"},
		{name: "different workloads have different measures", a: sqliteRun, b: fileioRun, edit: func(a, b *model.Run) {},
			sig: NotComparableMeasure, change: 0, reason: "A measured transactions/s (tx/s), B randwrite ops/s (ops/s)"},
		{name: "an observed process has no measure", a: commandRun, b: commandRun,
			edit: func(a, b *model.Run) { b.Target = model.Target{Kind: "pid", PID: &model.PIDConfig{PID: 7}} },
			sig:  NotComparableMeasure, reason: "B observed a running process"},
		{name: "a run without a result", a: sqliteRun, b: sqliteRun, edit: func(a, b *model.Run) { a.Result = nil },
			sig: NotComparableMeasure, reason: "A has no result"},
		{name: "a run that measured 0 has no relative change", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) {
				withRepeats(a, 0.02, 500, 505, 495)
				withRepeats(b, 0.02, 0, 505, 495)
			},
			sig: NotComparableMeasure, reason: "a run measured 0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, b := tc.a(), tc.b()
			tc.edit(a, b)
			h := headline(a, b)
			if h.Significance != tc.sig {
				t.Errorf("significance %q (%s), want %q", h.Significance, h.Reason, tc.sig)
			}
			if !math.IsNaN(tc.change) && math.Abs(h.Change-tc.change) > 0.02 {
				t.Errorf("change %+.3f, want %+.3f", h.Change, tc.change)
			}
			if tc.words != "" && h.Words != tc.words {
				t.Errorf("words %q, want %q", h.Words, tc.words)
			}
			if !strings.Contains(h.Reason, tc.reason) {
				t.Errorf("reason %q lacks %q", h.Reason, tc.reason)
			}
			if (h.Significance == Significant || h.Significance == NotSignificant) && h.Interval == nil {
				t.Error("repeats on both sides and no interval")
			}
			// Two batches made one after the other: the headline says a
			// change can be drift between them, and what to run instead.
			if h.Interval != nil && !h.Paired {
				if !strings.Contains(h.Reason, "made one batch after the other, not interleaved") {
					t.Errorf("reason %q does not say the batches were made one after the other", h.Reason)
				}
				if len(h.Advice) == 0 || !strings.Contains(h.Advice[len(h.Advice)-1], "perfsleuth compare --run ") {
					t.Errorf("advice %q does not say to run A and B interleaved", h.Advice)
				}
			}
			if h.Paired && (strings.Contains(h.Reason, "one batch after the other") || h.BatchDrift != 0) {
				t.Errorf("paired runs judged as batches: %q, batch drift %v", h.Reason, h.BatchDrift)
			}
		})
	}
}

// The measure of a single run is the one diagnose takes, so a single run and
// a diagnose record of the same workload compare on the same number.
func TestSingleRunMeasureIsDiagnoses(t *testing.T) {
	v, _ := valueOf(sqliteRun())
	if v.Median != 500 || v.Noise != nil || v.From != "1 observe run" {
		t.Errorf("sqlite value %+v, want 500 tx/s from one run, noise unknown", v)
	}
	v, _ = valueOf(fileioRun())
	if v.Median != 10000 {
		t.Errorf("fileio value %g, want 10000 ops/s", v.Median)
	}
	v, _ = valueOf(commandRun())
	if v.Median != 2 {
		t.Errorf("command value %g, want 2 s", v.Median)
	}
}

func TestAdviceRepeatsTheWorkload(t *testing.T) {
	cases := []struct {
		args []string
		kind string
		want string
	}{
		{[]string{"observe", "--json", "a.json", "sqlite", "--journal", "wal", "--rows", "2000"}, "sqlite",
			"perfsleuth diagnose --conditions baseline --repeat 5 --json A-baseline.json sqlite --journal wal --rows 2000"},
		{[]string{"observe", "--interval", "200ms", "--json=a.json", "--storage", "fileio", "--rw", "randwrite"}, "fileio",
			"perfsleuth diagnose --conditions baseline --repeat 5 --json A-baseline.json --interval 200ms --storage fileio --rw randwrite"},
		{[]string{"observe", "--", "sh", "-c", "make -j4 && ./it's"}, "command",
			`perfsleuth diagnose --conditions baseline --repeat 5 --json A-baseline.json -- sh -c 'make -j4 && ./it'\''s'`},
		{[]string{"bench", "sqlite"}, "sqlite", "perfsleuth diagnose --conditions baseline --repeat 5 --json A-baseline.json sqlite"},
		// The record's own report and page are not written over.
		{[]string{"observe", "--storage", "--output", "a.txt", "--html=a.html", "--json", "a.json", "--", "sysbench", "fileio", "run"}, "command",
			"perfsleuth diagnose --conditions baseline --repeat 5 --json A-baseline.json --storage -- sysbench fileio run"},
		{nil, "sqlite", "<A's workload and its flags>"},
	}
	for _, tc := range cases {
		r := sqliteRun()
		r.Tool.Args, r.Target.Kind = tc.args, tc.kind
		if got := adviceFor("A", r); !strings.HasSuffix(got, tc.want) {
			t.Errorf("advice for %q:\n  %s\nwant it to end in\n  %s", tc.args, got, tc.want)
		}
	}
}

// The advice to run A and B interleaved is their own workloads, each one
// word for the shell, as compare --run takes them.
func TestInterleaveAdvice(t *testing.T) {
	a, b := withRepeats(sqliteRun(), 0.02, 500, 505, 495), withRepeats(sqliteRun(), 0.02, 500, 505, 495)
	b.Tool.Args = []string{"diagnose", "--conditions", "baseline", "--repeat", "5", "sqlite", "--journal", "delete", "--sync", "full"}
	want := "perfsleuth compare --run 'sqlite --journal wal --sync normal' --run 'sqlite --journal delete --sync full'"
	if got := interleaveAdvice(a, b); !strings.HasSuffix(got, ": "+want) {
		t.Errorf("advice %q, want it to end in %q", got, want)
	}
	// A command with a quote, by --metric; a record without its command line.
	c, d := withRepeats(commandRun(), 0.02, 2, 2.1, 1.9), withRepeats(commandRun(), 0.02, 2, 2.1, 1.9)
	c.Tool.Args = []string{"diagnose", "--metric", "score: ([0-9.]+)", "--", "sh", "-c", "./it's"}
	c.Experiments.Measure = model.Measure{Name: "score: ([0-9.]+)", Source: "metric", HigherIsBetter: true}
	d.Tool.Args = nil
	got := interleaveAdvice(c, d)
	want = `perfsleuth compare --metric 'score: ([0-9.]+)' --run ` + units.ShellJoin([]string{`-- sh -c './it'\''s'`}) + ` --run "<B's workload and its flags>"`
	if !strings.HasSuffix(got, ": "+want) {
		t.Errorf("advice\n  %s\nwant it to end in\n  %s", got, want)
	}
}

func TestChangeWords(t *testing.T) {
	for _, tc := range []struct {
		change float64
		want   string
	}{
		{0, "performs the same"}, {-0.12, "is 12% slower"}, {-0.5, "is 2x slower"}, {-0.984, "is 62x slower"},
		{0.3, "is 30% faster"}, {1, "is 2x faster"}, {1.5, "is 2.5x faster"},
	} {
		if got := changeWords(tc.change); got != tc.want {
			t.Errorf("changeWords(%g) = %q, want %q", tc.change, got, tc.want)
		}
	}
}

// pairOf makes a and b the two sides of one interleaved comparison, their
// runs alternating A B, B A, ... as compare --run makes them.
func pairOf(a, b *model.Run) {
	a.Experiments.Pair = &model.Pair{ID: "x", Side: "A"}
	b.Experiments.Pair = &model.Pair{ID: "x", Side: "B"}
	ra, rb := a.Experiments.Conditions[0].Runs, b.Experiments.Conditions[0].Runs
	for i := range ra {
		first, second := 2*i+1, 2*i+2
		if i%2 == 1 {
			first, second = second, first
		}
		ra[i].Seq, rb[i].Seq = first, second
	}
}

// machineCase is the regression's two interleaved sides, B 13% slower in
// every round, with the CPU canary timed before each run at canA and canB.
func machineCase(canA, canB []float64) func(a, b *model.Run) {
	return func(a, b *model.Run) {
		withRepeats(a, 0.05, 1000, 1010, 990, 1005, 995, 1000, 1008, 992)
		withRepeats(b, 0.05, 870, 880, 860, 875, 865, 870, 878, 862)
		pairOf(a, b)
		canaries(a, canA...)
		canaries(b, canB...)
	}
}

// canaries sets the CPU canary's time before each of r's runs.
func canaries(r *model.Run, ms ...float64) {
	for i := range ms {
		r.Experiments.Conditions[0].Runs[i].CanaryMs = ms[i]
	}
}
