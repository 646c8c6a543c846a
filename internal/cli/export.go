package cli

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/perfsleuth/perfsleuth/internal/analyze"
	"github.com/perfsleuth/perfsleuth/internal/export"
	"github.com/perfsleuth/perfsleuth/internal/model"
)

func newExportCmd() *cobra.Command {
	paths := make([]string, len(export.Formats))
	cmd := &cobra.Command{
		Use:   "export RUN.json [--folded FILE] [--folded-offcpu FILE] [--pprof FILE] [--trace FILE] [--prometheus FILE]",
		Short: "Write a saved run record for flame graphs, pprof, Perfetto or Prometheus",
		Long: `Write a run record saved with --json in the formats other tools read: folded
stacks (flamegraph.pl, speedscope), a pprof profile (go tool pprof), a Chrome
trace (Perfetto, chrome://tracing) and the Prometheus text format. Like report,
it needs no kernel access and no root. Give at least one output; - writes that
one to stdout. docs/exports.md describes each format.`,
		DisableFlagsInUseLine: true,
		Args:                  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var asked []int
			seen := map[string]string{}
			stdout := ""
			for i, p := range paths {
				if p == "" {
					continue
				}
				flag := "--" + export.Formats[i].Flag
				if p == "-" {
					if stdout != "" {
						return fmt.Errorf("%s and %s both write to stdout (-): give one of them a file", stdout, flag)
					}
					stdout = flag
				} else if other, ok := seen[filepath.Clean(p)]; ok {
					return fmt.Errorf("%s and %s both write to %s: give each its own file", other, flag, p)
				} else {
					seen[filepath.Clean(p)] = flag
					// Before anything is rendered: a file that cannot be
					// made would leave the others of the set behind.
					if err := writableDir(flag, p); err != nil {
						return err
					}
				}
				asked = append(asked, i)
			}
			if len(asked) == 0 {
				var flags []string
				for _, f := range export.Formats {
					flags = append(flags, "--"+f.Flag)
				}
				return fmt.Errorf("nothing to export: give at least one of %s with a file (- for stdout)", strings.Join(flags, ", "))
			}
			run, err := model.Load(args[0])
			if err != nil {
				return err
			}
			analyze.Run(run)
			// Render every output before writing any, so that a record that
			// lacks what one format needs leaves no half of the set behind.
			outs := make([][]byte, len(asked))
			var errs []error
			for j, i := range asked {
				f := export.Formats[i]
				if outs[j], err = f.Render(run); err != nil {
					errs = append(errs, fmt.Errorf("--%s: %w", f.Flag, err))
				}
			}
			if len(errs) > 0 {
				return fmt.Errorf("%s: %w (nothing written)", args[0], errors.Join(errs...))
			}
			for j, i := range asked {
				f := export.Formats[i]
				if paths[i] == "-" {
					if _, err := cmd.OutOrStdout().Write(outs[j]); err != nil {
						return fmt.Errorf("--%s: write stdout: %w", f.Flag, err)
					}
					continue
				}
				if err := export.WriteFile(paths[i], outs[j]); err != nil {
					return fmt.Errorf("--%s: %w", f.Flag, err)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s (--%s): %s\n", paths[i], f.Flag, strings.ReplaceAll(f.Opens, "FILE", paths[i]))
			}
			return nil
		},
	}
	for i, f := range export.Formats {
		cmd.Flags().StringVar(&paths[i], f.Flag, "", f.Usage+"; - for stdout")
	}
	return cmd
}
