package cli

import (
	"github.com/spf13/cobra"

	"github.com/perfsleuth/perfsleuth/internal/runner"
)

// newChildCmd is the hidden command that runs an observed benchmark in a
// child process (see runner.RunChild); users never call it.
func newChildCmd() *cobra.Command {
	return &cobra.Command{
		Use:    runner.ChildCommand,
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := runner.RunChild(cmd.Context()); err != nil {
				// The parent reports it.
				return silentError{err}
			}
			return nil
		},
	}
}
