package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/htmlreport"
	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/report"
)

// outputFlags are the flags every measuring command shares.
type outputFlags struct {
	json string
	// html is the HTML page to write (observe and diagnose; report has its own).
	html string
	// text is the file the terminal report goes to, instead of the
	// terminal (observe --output).
	text string
	// commandOwnsStdout: the observed command writes to perfsleuth's
	// stdout, so the terminal report goes to stderr.
	commandOwnsStdout bool
}

// htmlUsage is the help of --html on every command that has it.
const htmlUsage = "write the report as one self-contained HTML page (verdict, findings, charts, flame graphs; see docs/html-report.md) to FILE"

func (o *outputFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.json, "json", "", "write the run record (versioned JSON, see docs/run-record.md) to FILE; - for stdout")
}

// check fails early, before anything runs, when the record or the page
// could not be saved.
func (o *outputFlags) check() error {
	if o.json != "" && o.json != "-" {
		if err := writableDir("--json", o.json); err != nil {
			return err
		}
	}
	if err := checkHTML(o.html, o.json); err != nil {
		return err
	}
	return ownFile("--output", o.text, "--output needs a file name: without it the report goes to the terminal",
		"the JSON record's or the HTML page's path: give the report its own file", o.json, o.html)
}

// checkHTML checks that the HTML page can be written to path (and does not
// overwrite the JSON record, other).
func checkHTML(path, other string) error {
	return ownFile("--html", path, "--html needs a file name: the page is written to a file, not to stdout",
		"the JSON record's path: give the page its own file", other)
}

// ownFile checks that flag's file can be written at path, a file of its
// own: not "-" (dash says why), none of others (clash says what they
// are; "" and "-" among them name no file), in a writable directory.
func ownFile(flag, path, dash, clash string, others ...string) error {
	switch path {
	case "":
		return nil
	case "-":
		return errors.New(dash)
	}
	for _, o := range others {
		if o != "" && o != "-" && filepath.Clean(path) == filepath.Clean(o) {
			return fmt.Errorf("%s %s is also %s", flag, path, clash)
		}
	}
	return writableDir(flag, path)
}

// writableDir checks that flag's file can be made at path: its directory
// is writable.
func writableDir(flag, path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("%s %s is a directory: give the name of a file in it", flag, path)
	}
	dir := filepath.Dir(path)
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return fmt.Errorf("%s %s: directory %s is not writable (%v): choose another path", flag, path, dir, err)
	}
	return nil
}

// emit saves and prints a finished, analysed run. The terminal view goes to
// stdout, or to stderr when the JSON record or an observed command takes
// stdout, or to the --output file.
func (o *outputFlags) emit(cmd *cobra.Command, run *model.Run) error {
	out := cmd.OutOrStdout()
	if o.commandOwnsStdout {
		out = cmd.ErrOrStderr()
	}
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
	if o.html != "" {
		if err := htmlreport.Save(run, o.html); err != nil {
			saveErr = errors.Join(saveErr, fmt.Errorf("write the HTML report to %s: %w (the results are printed above)", o.html, err))
		}
	}
	if o.text != "" {
		if err := os.WriteFile(o.text, report.Terminal(run, report.Options{}), 0o644); err != nil {
			// The record and the page are saved: print the report
			// where it would have gone, and say so.
			saveErr = errors.Join(saveErr, fmt.Errorf("write the report to %s: %w (it is printed above)", o.text, err))
		} else {
			out = nil
		}
	}
	if out != nil {
		out.Write(report.Terminal(run, report.Options{Color: useColor(out)}))
	}
	if saveErr != nil {
		return saveErr
	}
	if run.Interrupted {
		return errInterrupted
	}
	return nil
}
