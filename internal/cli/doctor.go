package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/perfsleuth/perfsleuth/internal/probe/registry"
	"github.com/perfsleuth/perfsleuth/internal/report"
	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
)

func newDoctorCmd() *cobra.Command {
	var asJSON bool
	var dir string
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Say what this host and kernel let perfsleuth see, and why not",
		Long: `Probe this host for what perfsleuth's observers need (root, BTF, eBPF program
and map types, tracepoints, perf events, delay accounting, cgroup v2, ...),
say for each what works, what is missing and what to do about it, and
describe the CPUs and the storage behind --dir.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if fi, err := os.Stat(dir); err != nil {
				if pe := (*os.PathError)(nil); errors.As(err, &pe) {
					err = pe.Err // the path is named already
				}
				return fmt.Errorf("--dir %s: %w: give the directory the workload's files are in", dir, err)
			} else if !fi.IsDir() {
				return fmt.Errorf("--dir %s is not a directory: give the directory the workload's files are in", dir)
			}
			checks := sysinfo.Capabilities()
			for _, p := range registry.New() {
				checks = append(checks, p.Check())
			}
			host, warnings := sysinfo.Collect(dir)
			out := cmd.OutOrStdout()
			if asJSON {
				b, err := json.MarshalIndent(struct {
					Host     any             `json:"host"`
					Checks   []sysinfo.Check `json:"checks"`
					Warnings []string        `json:"warnings,omitempty"`
				}{host, checks, warnings}, "", "  ")
				if err != nil {
					return err
				}
				_, err = out.Write(append(b, '\n'))
				return err
			}
			_, err := out.Write(report.Doctor(host, checks, warnings, report.Options{Color: useColor(out)}))
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the checks as JSON")
	cmd.Flags().StringVar(&dir, "dir", ".", "describe the storage behind this directory")
	return cmd
}
