package cli

import (
	"github.com/spf13/cobra"

	"github.com/perfsleuth/perfsleuth/internal/analyze"
	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/runner"
	"github.com/perfsleuth/perfsleuth/internal/target"
)

func newBenchCmd() *cobra.Command {
	bench := &cobra.Command{
		Use:   "bench",
		Short: "Run a built-in benchmark and print its results",
		Long: `Run one of perfsleuth's own benchmarks, unobserved, and print its results.
Use 'perfsleuth observe fileio|sqlite' to run the same benchmark under observation.`,
		Args: cobra.NoArgs,
	}
	bench.AddCommand(
		benchSub("fileio", "File-IO benchmark (what sysbench fileio and fio's psync engine do)", fileioTarget),
		benchSub("sqlite", "SQLite transaction benchmark (an open AndroBench database test)", sqliteTarget),
		newBenchAgeCmd(),
	)
	return bench
}

// targetBinder declares a built-in workload's flags on cmd and returns a
// function that builds the target once the flags are parsed.
type targetBinder func(cmd *cobra.Command) func() model.Target

func fileioTarget(cmd *cobra.Command) func() model.Target {
	c := bindFileIO(cmd.Flags())
	return func() model.Target { return model.Target{Kind: "fileio", FileIO: c} }
}

func sqliteTarget(cmd *cobra.Command) func() model.Target {
	c := bindSQLite(cmd.Flags())
	return func() model.Target { return model.Target{Kind: "sqlite", SQLite: c} }
}

func benchSub(name, short string, bind targetBinder) *cobra.Command {
	var out outputFlags
	cmd := &cobra.Command{
		Use:   name + " [flags]",
		Short: short,
		Args:  cobra.NoArgs,
	}
	settings := bind(cmd)
	out.bind(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := out.check(); err != nil {
			return err
		}
		bar := newProgressBar(cmd.ErrOrStderr())
		defer bar.Clear()
		run, err := runner.Bench(cmd.Context(), settings(), target.Hooks{Phase: bar.Phase, Progress: bar.Progress})
		bar.Clear()
		if err != nil {
			return err
		}
		analyze.Run(run)
		return out.emit(cmd, run)
	}
	return cmd
}
