// Package cli is perfsleuth's command line: one file per subcommand. It turns
// flags into a validated target, hands it to the runner, and renders what
// comes back. It is the only package that talks to the user.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/perfsleuth/perfsleuth/internal/runner"
)

// Exit statuses: 0 done, 2 any error perfsleuth reports (bad input, a
// missing file, a gone pid, a failing disk), 130 stopped by Ctrl-C (after
// printing what was measured), as shells report SIGINT. An observed command
// that fails passes its own status on (workloadFailed), as under time.
const (
	ExitOK          = 0
	ExitError       = 2
	ExitInterrupted = 130
)

// errInterrupted marks a run the user stopped; what was measured is printed.
var errInterrupted = errors.New("interrupted")

// silentError is an error already reported to the user (or by a child).
type silentError struct{ error }

// NewRoot builds the perfsleuth command tree.
func NewRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "perfsleuth",
		Short: "Why is this workload slow, and is it really the storage?",
		Long: `perfsleuth runs a workload (its own file-IO or SQLite benchmark, any command, or
an existing process), observes it, and says where its time goes.`,
		Version:       runner.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%s (see '%s --help')", plainFlagError(err), c.CommandPath())
	})
	root.AddCommand(newBenchCmd(), newObserveCmd(), newDiagnoseCmd(), newReportCmd(), newDoctorCmd(), newChildCmd(), newLoadCmd(), newExportCmd(), newCompareCmd(), newAgentCmd())
	showDefaults(root)
	return root
}

// parserWords are the words of Go's parsers that pflag passes on for a
// flag's bad value, and what perfsleuth says instead: what the value is not,
// in the user's terms.
var parserWords = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`strconv\.(?:ParseInt|ParseUint|Atoi): parsing ("[^"]*"): invalid syntax`), "$1 is not a whole number"},
	{regexp.MustCompile(`strconv\.(?:ParseInt|ParseUint|Atoi|ParseFloat): parsing ("[^"]*"): value out of range`), "$1 is out of range"},
	{regexp.MustCompile(`strconv\.ParseFloat: parsing ("[^"]*"): invalid syntax`), "$1 is not a number"},
	{regexp.MustCompile(`strconv\.ParseBool: parsing ("[^"]*"): invalid syntax`), "$1 is not true or false"},
	{regexp.MustCompile(`time: (?:invalid duration|missing unit in duration|unknown unit "[^"]*" in duration) ("[^"]*")`), "$1 is not a duration: use e.g. 10s, 2m or 1m30s"},
}

// plainFlagError says a flag's parse error in words (parserWords).
func plainFlagError(err error) string {
	msg := err.Error()
	for _, w := range parserWords {
		msg = w.re.ReplaceAllString(msg, w.with)
	}
	return msg
}

// showDefaults makes --help state every flag's default: pflag omits the
// defaults that are zero values (false, 0, ""), and "off" is a setting a
// user should see as much as any other.
func showDefaults(cmd *cobra.Command) {
	mark := func(f *pflag.Flag) {
		if f.Name == "help" || strings.Contains(f.Usage, "default") {
			return
		}
		switch f.DefValue {
		case "false":
			f.Usage += " (default off)"
		case "0", "0s":
			f.Usage += " (default " + f.DefValue + ")"
		case "", "[]":
			f.Usage += " (default none)"
		}
	}
	cmd.Flags().VisitAll(mark)
	cmd.PersistentFlags().VisitAll(mark)
	for _, c := range cmd.Commands() {
		showDefaults(c)
	}
}

// Main runs perfsleuth with args and returns the exit status.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := NewRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, errInterrupted):
		return ExitInterrupted
	case errors.Is(err, runner.ErrInterrupted):
		fmt.Fprintln(stderr, "perfsleuth: interrupted before anything was measured; nothing left behind")
		return ExitInterrupted
	}
	var wf workloadFailed
	if errors.As(err, &wf) {
		fmt.Fprintf(stderr, "perfsleuth: %s\n", wf.msg)
		return wf.status
	}
	var se silentError
	if !errors.As(err, &se) {
		fmt.Fprintf(stderr, "perfsleuth: error: %s\n", oneLine(err))
	}
	return ExitError
}

// oneLine joins a (possibly joined) error into a single line.
func oneLine(err error) string {
	return strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")
}
