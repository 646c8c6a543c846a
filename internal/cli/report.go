package cli

import (
	"github.com/spf13/cobra"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/report"
)

func newReportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "report RUN.json",
		Short: "Print a saved run record again",
		Long: `Render a run record saved with --json. Rendering needs no kernel access and no
root: a record from one machine can be read on another.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			run, err := model.Load(args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			_, err = out.Write(report.Terminal(run, report.Options{Color: useColor(out)}))
			return err
		},
	}
}
