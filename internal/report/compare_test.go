package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/compare"
	"github.com/perfsleuth/perfsleuth/internal/model"
)

// compareFixtures are pairs of real run records (A, B) made with the built
// binary on the development VM:
//   - sync: observe sqlite --rows 2000, WAL+NORMAL against DELETE+FULL;
//   - same: diagnose --conditions baseline --repeat 5 sqlite --rows 500,
//     twice, the same settings (DELETE+FULL);
//   - repeats: the same diagnose with WAL+NORMAL against the first of those;
//   - kinds: the observe-fileio and observe-sqlite fixtures above.
//
// The golden files are compare-NAME.golden (terminal) and
// compare-NAME.json.golden (JSON).
var compareFixtures = []struct{ name, a, b string }{
	{"sync", "compare-sync-a", "compare-sync-b"},
	{"same", "compare-same-a", "compare-same-b"},
	{"repeats", "compare-repeats-a", "compare-same-a"},
	{"kinds", "observe-fileio", "observe-sqlite"},
}

func loadPair(t *testing.T, a, b string) *compare.Comparison {
	t.Helper()
	ra, err := model.Load(filepath.Join("testdata", a+".json"))
	if err != nil {
		t.Fatal(err)
	}
	rb, err := model.Load(filepath.Join("testdata", b+".json"))
	if err != nil {
		t.Fatal(err)
	}
	c := compare.Compare(ra, rb)
	c.A.Path, c.B.Path = a+".json", b+".json"
	return c
}

// golden compares got with the golden file, or rewrites it with -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/report -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (go test ./internal/report -update accepts it):\n%s", path, lineDiff(string(want), string(got)))
	}
}

func TestCompareGolden(t *testing.T) {
	for _, f := range compareFixtures {
		t.Run(f.name, func(t *testing.T) {
			c := loadPair(t, f.a, f.b)
			text := CompareTerminal(c, Options{})
			golden(t, filepath.Join("testdata", "compare-"+f.name+".golden"), text)
			for i, l := range strings.Split(string(text), "\n") {
				if n := len([]rune(l)); n > Width {
					t.Errorf("line %d is %d columns: %q", i+1, n, l)
				}
			}
			js, err := CompareJSON(c)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", "compare-"+f.name+".json.golden"), js)
		})
	}
}

// What the issue asks of the two sqlite comparisons, beyond the golden
// files: the sync behaviour is named first and the fsync count and latency
// are the cause; identical configurations show no significant difference.
func TestCompareFixturesSayWhatTheIssueAsks(t *testing.T) {
	c := loadPair(t, "compare-sync-a", "compare-sync-b")
	if len(c.Issues) == 0 || c.Issues[0].ID != "settings.sync" || c.Issues[0].Severity != compare.NotComparable {
		t.Errorf("first issue %+v, want settings.sync, not comparable", c.Issues)
	}
	if len(c.Explanation.Causes) == 0 || c.Explanation.Causes[0].ID != "sync" {
		t.Fatalf("cause %+v, want sync", c.Explanation.Causes)
	}
	for _, part := range []string{"fdatasync calls per transaction", "on average"} {
		if !strings.Contains(c.Explanation.Summary, part) {
			t.Errorf("explanation lacks %q: %s", part, c.Explanation.Summary)
		}
	}
	text := string(CompareTerminal(c, Options{}))
	if s, h := strings.Index(text, "sync behaviour"), strings.Index(text, "headline"); s < 0 || s > h {
		t.Errorf("the sync behaviour is not named before the headline:\n%s", text)
	}

	same := loadPair(t, "compare-same-a", "compare-same-b")
	if same.Headline.Significance != compare.NotSignificant || !same.Comparable || len(same.Explanation.Causes) > 0 {
		t.Errorf("identical configurations: significance %s, comparable %v, causes %d; want not significant, comparable, none",
			same.Headline.Significance, same.Comparable, len(same.Explanation.Causes))
	}
	for _, d := range same.Differences {
		if d.Differs {
			t.Errorf("identical configurations differ in %s", d.Words())
		}
	}

	rep := loadPair(t, "compare-repeats-a", "compare-same-a")
	if rep.Headline.Significance != compare.Significant || rep.Explanation.Causes[0].ID != "sync" {
		t.Errorf("WAL against DELETE with repeats: %s, cause %s; want significant, sync", rep.Headline.Significance, rep.Explanation.Causes[0].ID)
	}
}

var snakeKey = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// The JSON carries schema_version, uses snake_case keys and reads back into
// the same comparison.
func TestCompareJSONIsVersionedSnakeCase(t *testing.T) {
	c := loadPair(t, "compare-sync-a", "compare-sync-b")
	b, err := CompareJSON(c)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["schema_version"] != float64(compare.SchemaVersion) {
		t.Errorf("schema_version %v, want %d", m["schema_version"], compare.SchemaVersion)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if !snakeKey.MatchString(k) {
					t.Errorf("key %q at %s is not snake_case", k, path)
				}
				walk(path+"."+k, e)
			}
		case []any:
			for _, e := range x {
				walk(path+"[]", e)
			}
		}
	}
	walk("", m)
	var again compare.Comparison
	if err := json.Unmarshal(b, &again); err != nil {
		t.Fatal(err)
	}
	b2, _ := CompareJSON(&again)
	if !bytes.Equal(b, b2) {
		t.Errorf("the JSON does not read back the same:\n%s", lineDiff(string(b), string(b2)))
	}
}

func TestCompareHostileNamesDoNotReachTheTerminal(t *testing.T) {
	a, err := model.Load(filepath.Join("testdata", "observe-command.json"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := model.Load(filepath.Join("testdata", "observe-command.json"))
	evil := "\x1b]0;pwned\x07\x1b[2J"
	b.Target.Command.Argv = []string{"sh", "-c", evil}
	b.Host.Kernel = evil
	out := CompareTerminal(compare.Compare(a, b), Options{})
	if bytes.ContainsAny(out, "\x1b\x07") {
		t.Errorf("control characters from a record reached the output:\n%q", out)
	}
	if !bytes.Contains(out, []byte(`\x1b`)) {
		t.Error("escaped form missing: the user should see that the name held an escape")
	}
}

func TestCompareColorOnlyWhenAsked(t *testing.T) {
	c := loadPair(t, "compare-sync-a", "compare-sync-b")
	if bytes.Contains(CompareTerminal(c, Options{}), []byte("\x1b[")) {
		t.Error("colour codes without Options.Color")
	}
	if !bytes.Contains(CompareTerminal(c, Options{Color: true}), []byte("\x1b[")) {
		t.Error("no colour with Options.Color")
	}
}
