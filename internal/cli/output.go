package cli

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/analyze"
	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/report"
)

// outputFlags are the flags every measuring command shares.
type outputFlags struct {
	json string
}

func (o *outputFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.json, "json", "", "write the run record (versioned JSON, see docs/run-record.md) to FILE; - for stdout")
}

// check fails early, before anything runs, when the record could not be saved.
func (o *outputFlags) check() error {
	if o.json == "" || o.json == "-" {
		return nil
	}
	dir := filepath.Dir(o.json)
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return fmt.Errorf("--json %s: directory %s is not writable (%v): choose another path", o.json, dir, err)
	}
	return nil
}

// emit saves and prints a finished run. The terminal view goes to stdout, or
// to stderr when the JSON record takes stdout.
func (o *outputFlags) emit(cmd *cobra.Command, run *model.Run) error {
	analyze.FromObservation(run)
	analyze.Analyze(run)
	out := cmd.OutOrStdout()
	var saveErr error
	switch o.json {
	case "":
	case "-":
		out = cmd.ErrOrStderr()
		b, err := report.JSON(run)
		if err != nil {
			return err
		}
		cmd.OutOrStdout().Write(b)
	default:
		if err := model.Save(run, o.json); err != nil {
			saveErr = fmt.Errorf("save the run record to %s: %w (the results are printed above)", o.json, err)
		}
	}
	out.Write(report.Terminal(run, report.Options{Color: useColor(out)}))
	if saveErr != nil {
		return saveErr
	}
	if run.Interrupted {
		return errInterrupted
	}
	return nil
}
