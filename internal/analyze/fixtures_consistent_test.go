package analyze

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// TestRecordsConsistent: every run record kept as a test fixture, each a
// real run of perfsleuth (or, full.json, one with every section filled),
// passes perfsleuth's check of its own figures: a fixture that trips it is
// a golden output built on figures that contradict each other.
func TestRecordsConsistent(t *testing.T) {
	files, err := filepath.Glob("../*/testdata/*.json")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		// Every JSON file kept beside the renderers' tests is a run
		// record: one that does not load is a fixture no test reads
		// as a record, or one this perfsleuth can no longer read.
		// Regression: a load error skipped the file without a word.
		run, err := model.Load(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if run.Target.Kind == "" {
			t.Errorf("%s: loads, but names no target: not a run record", f)
			continue
		}
		n++
		t.Run(strings.TrimPrefix(f, "../"), func(t *testing.T) {
			Run(run)
			for _, x := range run.Findings {
				if x.ID == "perfsleuth.inconsistent" {
					t.Errorf("%s:\n  %s", x.Summary, strings.Join(x.Evidence, "\n  "))
				}
			}
		})
	}
	if n < 10 {
		t.Fatalf("%d run records under ../*/testdata: want the report's, export's and HTML report's fixtures", n)
	}
}
