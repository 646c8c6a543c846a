package cli

import (
	"github.com/spf13/cobra"

	"github.com/perfsleuth/perfsleuth/internal/experiment"
	"github.com/perfsleuth/perfsleuth/internal/target"
)

// newChildCmd is the hidden command that runs an observed benchmark in a
// child process (see target.RunChild); users never call it.
func newChildCmd() *cobra.Command {
	return &cobra.Command{
		Use:    target.ChildCommand,
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := target.RunChild(cmd.Context()); err != nil {
				// The parent reports it.
				return silentError{err}
			}
			return nil
		},
	}
}

// newLoadCmd is the hidden command that runs a condition's load (busy
// threads, a background writer) for diagnose (see experiment.RunLoad).
func newLoadCmd() *cobra.Command {
	return &cobra.Command{
		Use:                experiment.LoadCommand,
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := experiment.RunLoad(cmd.Context(), args, cmd.OutOrStdout()); err != nil {
				return silentError{err}
			}
			return nil
		},
	}
}
