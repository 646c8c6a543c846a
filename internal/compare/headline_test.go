package compare

import (
	"math"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
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
		// "B is 16% faster". A batch that trends has no stable median.
		{name: "one side's runs drift", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) {
				withRepeats(a, 0.15, 41422, 39310, 38698, 38314, 33461)
				a.Experiments.BaselineDrift = &model.Drift{Change: -0.2, P: 0.017}
				withRepeats(b, 0.04, 44733, 45100, 44000, 44900, 44500)
			},
			sig: NotSignificant, change: math.NaN(), reason: "A's runs fell -20% from the first to the last"},
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
