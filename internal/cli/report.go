package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/perfsleuth/perfsleuth/internal/analyze"
	"github.com/perfsleuth/perfsleuth/internal/htmlreport"
	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/report"
)

func newReportCmd() *cobra.Command {
	var html string
	cmd := &cobra.Command{
		Use:   "report RUN.json",
		Short: "Print a saved run record again",
		Long: `Render a run record saved with --json. Rendering needs no kernel access and no
root: a record from one machine can be read on another.

With --html FILE the record becomes one self-contained HTML page instead, and
nothing is printed: the page holds everything the terminal report does.`,
		Example: `  perfsleuth report run.json
  perfsleuth report run.json --html run.html`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// The record's own path counts as taken: the page must not
			// overwrite the record it is made from.
			if err := checkHTML(html, args[0]); err != nil {
				return err
			}
			run, err := model.Load(args[0])
			if err != nil {
				return err
			}
			analyze.Run(run)
			if html != "" {
				if err := htmlreport.Save(run, html); err != nil {
					return fmt.Errorf("write the HTML report to %s: %w", html, err)
				}
				return nil
			}
			out := cmd.OutOrStdout()
			_, err = out.Write(report.Terminal(run, report.Options{Color: useColor(out)}))
			return err
		},
	}
	cmd.Flags().StringVar(&html, "html", "", htmlUsage+" instead of printing the report")
	return cmd
}
