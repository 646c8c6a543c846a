package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/perfsleuth/perfsleuth/internal/age"
)

// newBenchAgeCmd is `bench age`: the aged-file-system write test
// (internal/age). Its JSON is its own result, not a run record.
func newBenchAgeCmd() *cobra.Command {
	c := age.Defaults()
	var jsonOut string
	cmd := &cobra.Command{
		Use:   "age [flags]",
		Short: "Write amplification and fragmentation of an aged file system: a write before and after filling an area with small files and deleting some",
		Long: `Write a file (--write, fsynced) on the file system of --dir, then fill --area of it
with small files (--small each), delete a share of them (--delete, spread evenly),
and write the same file again. For each write: what the application wrote, what the
file system's block device completed (/proc/diskstats: data, metadata, journal),
the requests, the file's extents (FIEMAP) and the time. Everything is made in one
scratch directory under --dir and removed afterwards, on Ctrl-C too; it refuses to
run where the area and the writes would leave less than 2% of the file system free.
See docs/benchmarks.md.`,
		Args: cobra.NoArgs,
	}
	fs := cmd.Flags()
	fs.StringVar(&c.Dir, "dir", c.Dir, "a directory on the file system to age (a scratch directory is made in it)")
	fs.Var(sizeValue{&c.Area}, "area", "how much of the file system the small files take")
	fs.Var(sizeValue{&c.Small}, "small", "each small file's size (the field report's: 6k)")
	fs.Var(shareValue{&c.Delete}, "delete", "share of the small files deleted before the aged write: 0.5 or 50% (every other file)")
	fs.Var(sizeValue{&c.Write}, "write", "size of the file written fresh and aged")
	fs.StringVar(&jsonOut, "json", "", "write the result (JSON, bench age's own: see docs/benchmarks.md) to FILE; - for stdout")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if jsonOut != "" && jsonOut != "-" {
			if err := writableDir("--json", jsonOut); err != nil {
				return err
			}
		}
		if err := age.Validate(&c); err != nil {
			return err
		}
		bar := newProgressBar(cmd.ErrOrStderr())
		res, err := age.Run(cmd.Context(), c, bar.Phase)
		bar.Clear()
		if res == nil {
			return err
		}
		out := cmd.OutOrStdout()
		if jsonOut != "" {
			b, jerr := json.MarshalIndent(res, "", "  ")
			if jerr != nil {
				return jerr
			}
			b = append(b, '\n')
			if jsonOut == "-" {
				out.Write(b)
				out = cmd.ErrOrStderr()
			} else if werr := os.WriteFile(jsonOut, b, 0o644); werr != nil {
				err = fmt.Errorf("save the result to %s: %w (it is printed below)", jsonOut, werr)
			}
		}
		fmt.Fprint(out, res.Text())
		if err != nil {
			return err
		}
		if res.Interrupted {
			return errInterrupted
		}
		return nil
	}
	return cmd
}

// shareValue is a share flag: 0.5 or 50%.
type shareValue struct{ p *float64 }

func (v shareValue) String() string {
	if v.p == nil {
		return ""
	}
	return strconv.FormatFloat(*v.p, 'g', -1, 64)
}

func (v shareValue) Set(s string) error {
	pct, isPct := strings.CutSuffix(strings.TrimSpace(s), "%")
	f, err := strconv.ParseFloat(pct, 64)
	if err != nil {
		return fmt.Errorf("%q is not a share: give 0.5 or 50%%", s)
	}
	if isPct {
		f /= 100
	}
	*v.p = f
	return nil
}

func (shareValue) Type() string { return "share" }
