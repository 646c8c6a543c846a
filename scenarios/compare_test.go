package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/compare"
	"github.com/perfsleuth/perfsleuth/internal/model"
)

// perfsleuth runs the built binary in dir and returns its stdout, stderr
// and exit status.
func perfsleuth(t *testing.T, dir string, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := command(ctx, args...)
	cmd.Dir = dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		status = exit.ExitCode()
	case err != nil:
		t.Fatalf("perfsleuth %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), status
}

// record runs a perfsleuth command that saves a run record and loads it.
func record(t *testing.T, dir, path string, args ...string) *model.Run {
	t.Helper()
	if out, errOut, status := perfsleuth(t, dir, args...); status != 0 {
		t.Fatalf("perfsleuth %s: exit status %d\n%s%s", strings.Join(args, " "), status, out, errOut)
	}
	run := loadRecord(t, path)
	return run
}

// compareRecords runs perfsleuth compare and returns its terminal view and
// the comparison it saved.
func compareRecords(t *testing.T, dir, a, b string) (string, *compare.Comparison) {
	t.Helper()
	path := filepath.Join(dir, "comparison.json")
	out, errOut, status := perfsleuth(t, dir, "compare", "--json", path, a, b)
	if status != 0 {
		t.Fatalf("perfsleuth compare: exit status %d\n%s%s", status, out, errOut)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c compare.Comparison
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	t.Logf("perfsleuth compare %s %s:\n%s", filepath.Base(a), filepath.Base(b), out)
	return out, &c
}

// The issue's first case: WAL+NORMAL against DELETE+FULL. compare must name
// the sync behaviour before any conclusion and give the fsync count and
// latency as the cause.
func TestCompareSQLiteSyncSettings(t *testing.T) {
	work := t.TempDir()
	a, b := filepath.Join(work, "a.json"), filepath.Join(work, "b.json")
	ra := record(t, work, a, "observe", "--interval", "200ms", "--json", a, "sqlite", "--journal", "wal", "--sync", "normal", "--rows", "2000")
	needEBPF(t, ra)
	record(t, work, b, "observe", "--interval", "200ms", "--json", b, "sqlite", "--journal", "delete", "--sync", "full", "--rows", "2000")
	out, c := compareRecords(t, work, a, b)

	if len(c.Issues) == 0 || c.Issues[0].ID != "settings.sync" || c.Issues[0].Severity != compare.NotComparable {
		t.Errorf("first comparability issue %+v, want settings.sync (not comparable)", c.Issues)
	}
	if c.Headline.Change > -0.5 {
		t.Errorf("DELETE+FULL changed %+.0f%% against WAL+NORMAL, expected it at least twice as slow", c.Headline.Change*100)
	}
	if c.Headline.Significance != compare.Unknown || len(c.Headline.Advice) != 2 {
		t.Errorf("single runs: significance %s with %d advice lines, want unknown and what to run for each", c.Headline.Significance, len(c.Headline.Advice))
	}
	if len(c.Explanation.Causes) == 0 || c.Explanation.Causes[0].ID != "sync" {
		t.Fatalf("causes %+v, want sync calls first", c.Explanation.Causes)
	}
	for _, part := range []string{"fdatasync calls per transaction", "on average", "sync behaviour named first"} {
		if !strings.Contains(c.Explanation.Summary, part) {
			t.Errorf("explanation lacks %q: %s", part, c.Explanation.Summary)
		}
	}
	// In the terminal view too: the sync behaviour comes before the headline
	// and the conclusion (words compared across the view's line wraps).
	flat := strings.Join(strings.Fields(out), " ")
	sync, head, cause := strings.Index(flat, "sync behaviour"), strings.Index(flat, " headline: "), strings.Index(flat, "most likely cause is sync calls")
	if sync < 0 || head < 0 || cause < 0 || sync > head || head > cause {
		t.Errorf("terminal view: sync behaviour at %d, headline at %d, cause at %d; want them in that order", sync, head, cause)
	}
}

// The issue's second case: two identical configurations, with repeats on
// both sides, show no significant difference and nothing to explain.
//
// Regression: two diagnose batches of the same configuration, made one
// after the other, drifted 7%, 9%, 12% and 16% apart on this VM and CI's
// (the last with A's runs falling steadily, 41,422 down to 33,461 tx/s,
// while B's did not), and compare called it a change. No statistic of two
// batches can tell drift between them from a change of configuration: the
// product's answer is to run A and B interleaved (compare --run), where
// drift weighs on both alike, and that is what a user comparing two
// configurations is told to do. A batch that trends within itself is
// caught even then (TestHeadline, "one side's runs drift").
//
// Regression: interleaved, A B, B A, A B, ..., it still failed in CI at
// 29d61bc, "B is 10% faster", B ahead in 7 rounds of 8 in either order:
// a fixed alternation puts each side at the same places of every four
// runs, and what comes back on the machine at that rhythm fell on one
// side. The product now draws each round's order at random
// (experiment.roundOrder).
func TestCompareIdenticalConfigs(t *testing.T) {
	work := t.TempDir()
	a, b, path := filepath.Join(work, "a.json"), filepath.Join(work, "b.json"), filepath.Join(work, "comparison.json")
	// 8 rounds, not compare's default 5. Two identical sides are called
	// different as often as the product's test errs: its 95% interval
	// excludes zero about 6% of the time whatever the rounds (all five
	// rounds' changes of one sign, 1 in 16), and the change must then
	// also pass the rounds' noise and the 10% material threshold. That
	// left about 1 in 110 with 5 rounds, 1 in 450 with 8 and 1 in 1,000
	// with 10, resampling 96 runs of this configuration on this VM (each
	// about ±10%; 80 runs of 10,000 rows gave 1 in 110 and 1 in 300), and
	// CI failed on it once: "B is 10% slower", the five rounds -4% to
	// -14%. A test that fails 1 run in 100 by design blocks landings; the
	// assertion stays, the rounds give it the data to hold.
	//
	// 7,000 rows: about 0.5 s of work a run (insert, update, delete) and
	// 0.5 s of set-up, 18 runs with the warm-ups. With 10,000 rows and 5
	// rounds the test took 16 s and issue 14's command (go test -count=5
	// of it, TestExperimentSyncBound and TestScenarioVerdicts) 530-560 s
	// of go test's 10 minutes; with 20,000 it did not end within them.
	w := "sqlite --journal wal --sync normal --rows 7000"
	out, errOut, status := perfsleuth(t, work, "compare", "--repeat", "8", "--save-a", a, "--save-b", b, "--json", path, "--run", w, "--run", w)
	if status != 0 {
		t.Fatalf("perfsleuth compare --run: exit status %d\n%s%s", status, out, errOut)
	}
	t.Logf("perfsleuth compare --run %q --run %q:\n%s", w, w, out)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c compare.Comparison
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{a, b} {
		r := loadRecord(t, p)
		if r.Experiments == nil || r.Experiments.Pair == nil || len(r.Experiments.Conditions[0].Runs) != 8 {
			t.Fatalf("%s: not 8 interleaved runs: %+v", p, r.Experiments)
		}
	}
	if !c.Comparable {
		t.Errorf("identical configurations called not comparable: %+v", c.Issues)
	}
	if !c.Headline.Paired {
		t.Error("the interleaved runs were not paired")
	}
	if c.Headline.Significance != compare.NotSignificant {
		t.Errorf("significance %s (%s), want not significant", c.Headline.Significance, c.Headline.Reason)
	}
	if len(c.Explanation.Causes) > 0 {
		t.Errorf("causes given for no difference: %+v", c.Explanation.Causes)
	}
	if !strings.Contains(out, "no significant difference") {
		t.Errorf("the terminal view does not say there is no significant difference")
	}
}

func TestCompareBadInput(t *testing.T) {
	work := t.TempDir()
	notRecord := filepath.Join(work, "other.json")
	os.WriteFile(notRecord, []byte(`{"name": "not a run"}`), 0o644)
	comparison := filepath.Join(work, "comparison.json")
	os.WriteFile(comparison, []byte(`{"schema_version": 1, "a": {}, "b": {}}`), 0o644)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"compare", "a.json"}, "compare takes two run records, got 1"},
		{[]string{"compare", "missing.json", notRecord}, "run record A: missing.json does not exist: save one with --json"},
		{[]string{"compare", comparison, notRecord}, "it is not a run record (a comparison's --json cannot be compared again)"},
		{[]string{"compare", notRecord, notRecord}, "is not a perfsleuth run record (no schema_version)"},
	}
	for _, tc := range cases {
		out, errOut, status := perfsleuth(t, work, tc.args...)
		if status != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("perfsleuth %s: exit status %d, stderr %q; want 2 and %q (stdout %q)", strings.Join(tc.args, " "), status, errOut, tc.want, out)
		}
	}
}
