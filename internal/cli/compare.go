package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/perfsleuth/perfsleuth/internal/analyze"
	"github.com/perfsleuth/perfsleuth/internal/compare"
	"github.com/perfsleuth/perfsleuth/internal/htmlreport"
	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/report"
)

// compareFlags are compare's outputs besides the terminal view.
type compareFlags struct {
	json string
	// html is the comparison's HTML page, written from the same Comparison
	// the terminal and JSON views render.
	html string
}

// check fails before any record is loaded when an output could not be
// saved, or would overwrite another output or one of the records.
func (f *compareFlags) check(a, b string) error {
	if f.json != "" && f.json != "-" {
		if err := (&outputFlags{json: f.json}).check(); err != nil {
			return err
		}
	}
	if err := checkHTML(f.html, f.json); err != nil {
		return err
	}
	for _, r := range []struct{ side, path string }{{"A", a}, {"B", b}} {
		if f.html != "" && filepath.Clean(f.html) == filepath.Clean(r.path) {
			return fmt.Errorf("--html %s is run record %s: give the page its own file", f.html, r.side)
		}
		if f.json != "" && f.json != "-" && filepath.Clean(f.json) == filepath.Clean(r.path) {
			return fmt.Errorf("--json %s is run record %s: give the comparison its own file", f.json, r.side)
		}
	}
	return nil
}

func newCompareCmd() *cobra.Command {
	var f compareFlags
	var r runFlags
	cmd := &cobra.Command{
		Use:   "compare A.json B.json | --run 'A' --run 'B'",
		Short: "Compare two saved runs: is B different from A, and why",
		Long: `Compare run B against run A, both records saved with --json (observe, bench or
diagnose). First what makes the two not comparable like for like (different
sync settings, a cold cache in one, another thread count) and what else differs
(kernel, CPUs, file system, mount options, IO scheduler, observer), then each
run's headline measure and the change, significant only when both
sides have repeats (diagnose --conditions baseline --repeat N) and the 95%
bootstrap interval of the change excludes zero and the change exceeds both
sides' noise. Then the time accounting side by side, what was measured to
differ beyond its threshold, and the most likely cause, ranked by how much of
the difference its evidence accounts for. See docs/compare.md.

With --html FILE the same comparison is also written as one self-contained
HTML page, in the same order, with the charts side by side
(docs/html-report.md).

With --run given twice, compare runs the two workloads itself, interleaved:
--repeat rounds, each one run of A and one of B back to back, in an
order drawn at random for each round (half of the rounds A first), so
that a machine that drifts cannot pose as a difference (two batches made
one after the other can differ by 10% with nothing changed). The interval is then over rounds, paired.`,
		Example: `  perfsleuth observe --json A.json sqlite --journal wal --sync normal
  perfsleuth observe --json B.json sqlite --journal delete --sync full
  perfsleuth compare A.json B.json
  perfsleuth diagnose --conditions baseline --repeat 5 --json A.json sqlite
  perfsleuth compare --json cmp.json A.json B.json
  perfsleuth compare --html cmp.html A.json B.json
  perfsleuth compare --run 'sqlite --journal wal' --run 'sqlite --journal delete'
  perfsleuth compare --repeat 7 --run './bench -t 1' --run './bench -t 4'`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := r.check(cmd, args); err != nil || r.on() {
				return err
			}
			if len(args) != 2 {
				return fmt.Errorf("compare takes two run records, got %d: perfsleuth compare A.json B.json", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if r.on() {
				return r.runCompare(cmd, &f)
			}
			if err := f.check(args[0], args[1]); err != nil {
				return err
			}
			a, err := loadForCompare("A", args[0])
			if err != nil {
				return err
			}
			b, err := loadForCompare("B", args[1])
			if err != nil {
				return err
			}
			c := compare.Compare(a, b)
			c.A.Path, c.B.Path = args[0], args[1]
			return f.write(cmd, c)
		},
	}
	cmd.Flags().StringVar(&f.json, "json", "", "write the comparison (versioned JSON, see docs/compare.md) to FILE; - for stdout")
	r.bind(cmd)
	cmd.Flags().StringVar(&f.html, "html", "", "write the comparison as one self-contained HTML page (comparability, headline, charts side by side, the cause; see docs/html-report.md) to FILE")
	return cmd
}

// loadForCompare loads one side's record, with errors that say what to do.
func loadForCompare(side, path string) (*model.Run, error) {
	run, err := model.Load(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("run record %s: %s does not exist: save one with --json (e.g. perfsleuth observe --json %s sqlite)", side, path, path)
	case err != nil:
		return nil, fmt.Errorf("run record %s: %w: give a file saved with --json by observe, bench or diagnose", side, err)
	case run.Target.Kind == "":
		return nil, fmt.Errorf("run record %s: %s names no workload (target.kind): it is not a run record (a comparison's --json cannot be compared again); give a file saved with --json by observe, bench or diagnose", side, path)
	}
	analyze.Run(run)
	return run, nil
}

// write prints the terminal view and saves the other outputs. The terminal
// view goes to stderr when the JSON takes stdout. The page is saved first,
// so that a failure to save it leaves stdout empty.
func (f *compareFlags) write(cmd *cobra.Command, c *compare.Comparison) error {
	out := cmd.OutOrStdout()
	if f.html != "" {
		if err := htmlreport.SaveCompare(c, f.html); err != nil {
			return fmt.Errorf("write the HTML page of the comparison to %s: %w", f.html, err)
		}
	}
	if f.json != "" {
		b, err := report.CompareJSON(c)
		if err != nil {
			return err
		}
		if f.json == "-" {
			out = cmd.ErrOrStderr()
			if _, err := cmd.OutOrStdout().Write(b); err != nil {
				return err
			}
		} else if err := model.WriteAtomic(f.json, b); err != nil {
			return fmt.Errorf("save the comparison to %s: %w", f.json, err)
		}
	}
	_, err := out.Write(report.CompareTerminal(c, report.Options{Color: useColor(out)}))
	return err
}
