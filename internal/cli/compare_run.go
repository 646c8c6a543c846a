package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/perfsleuth/perfsleuth/internal/analyze"
	"github.com/perfsleuth/perfsleuth/internal/compare"
	"github.com/perfsleuth/perfsleuth/internal/experiment"
	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/probe"
	"github.com/perfsleuth/perfsleuth/internal/target"
)

// runFlags are compare's interleaved mode: it runs the two workloads
// itself, interleaving them, instead of reading two saved records.
type runFlags struct {
	runs         []string
	repeat       int
	saveA, saveB string
	metric       string
	metricLower  bool
}

// defaultPairRepeat: five rounds give a paired bootstrap interval that can
// exclude zero at the 95% level on a shared machine (three cannot tell
// much: each resample then repeats a round).
const defaultPairRepeat = 5

func (r *runFlags) bind(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringArrayVar(&r.runs, "run", nil, "instead of two records: a workload to run and compare, given twice (A, then B), each as observe takes it, quoted: 'sqlite --journal wal', 'fileio --rw randwrite', or a command ('./bench --threads 4'); the two are run interleaved, in rounds, the order of each drawn at random")
	fs.IntVar(&r.repeat, "repeat", defaultPairRepeat, "with --run: rounds, each one run of A and one of B")
	fs.StringVar(&r.saveA, "save-a", "", "with --run: save A's run record (the run with the median measure, carrying every run) to FILE")
	fs.StringVar(&r.saveB, "save-b", "", "with --run: save B's run record to FILE")
	fs.StringVar(&r.metric, "metric", "", "with --run, for commands: a regex whose first group is the number to compare, from their output (default: their wall time)")
	fs.BoolVar(&r.metricLower, "metric-lower", false, "the --metric number is a time or a cost: lower is better")
}

// on says whether the interleaved mode was asked for.
func (r *runFlags) on() bool { return len(r.runs) > 0 }

// check validates the mode's flags.
func (r *runFlags) check(cmd *cobra.Command, args []string) error {
	if !r.on() {
		for _, name := range []string{"repeat", "save-a", "save-b", "metric", "metric-lower"} {
			if cmd.Flags().Changed(name) {
				return fmt.Errorf("--%s goes with --run: compare runs the workloads itself only when given two --run", name)
			}
		}
		return nil
	}
	switch {
	case len(args) > 0:
		return errors.New("give either two run records or two --run, not both")
	case len(r.runs) != 2:
		return fmt.Errorf("--run given %d times: give it twice, A's workload then B's", len(r.runs))
	case r.repeat < experiment.MinRepeat:
		return fmt.Errorf("--repeat %d: use %d or more (a paired interval needs rounds)", r.repeat, experiment.MinRepeat)
	}
	for _, p := range []struct{ flag, path string }{{"--save-a", r.saveA}, {"--save-b", r.saveB}} {
		if p.path != "" {
			if err := (&outputFlags{json: p.path}).check(); err != nil {
				return fmt.Errorf("%s: %w", p.flag, err)
			}
		}
	}
	if r.saveA != "" && r.saveA == r.saveB {
		return errors.New("--save-a and --save-b name the same file: give each record its own")
	}
	return nil
}

// pair runs A and B interleaved and returns their records, analysed.
func (r *runFlags) pair(cmd *cobra.Command) (*model.Run, *model.Run, error) {
	metric, err := metricOf(r.metric, r.metricLower)
	if err != nil {
		return nil, nil, err
	}
	var specs [2]experiment.Spec
	for i, s := range r.runs {
		spec, err := workloadSpec(s)
		if err != nil {
			return nil, nil, fmt.Errorf("--run %s (%s): %w", []string{"A", "B"}[i], s, err)
		}
		if spec.Target == nil {
			spec.Metric, spec.MetricLowerBetter = metric, r.metricLower
		} else if metric != nil {
			return nil, nil, errors.New("--metric is for commands: a built-in benchmark measures its own throughput")
		}
		spec.Observe = probe.Options{Interval: defaultInterval}
		specs[i] = spec
	}
	bar := newProgressBar(cmd.ErrOrStderr())
	defer bar.Clear()
	a, b, err := experiment.Pair(cmd.Context(), experiment.PairSpec{A: specs[0], B: specs[1], Repeat: r.repeat}, experimentHooks(cmd, bar))
	bar.Clear()
	if err != nil {
		return nil, nil, err
	}
	for _, s := range []struct {
		run  *model.Run
		path string
	}{{a, r.saveA}, {b, r.saveB}} {
		analyze.Run(s.run)
		if s.path != "" {
			if err := model.Save(s.run, s.path); err != nil {
				return nil, nil, fmt.Errorf("save the run record to %s: %w", s.path, err)
			}
		}
	}
	return a, b, nil
}

// runCompare is compare --run: the comparison of two workloads it ran.
func (r *runFlags) runCompare(cmd *cobra.Command, f *compareFlags) error {
	if err := f.check(r.saveA, r.saveB); err != nil {
		return err
	}
	a, b, err := r.pair(cmd)
	if err != nil {
		return err
	}
	c := compare.Compare(a, b)
	c.A.Path, c.B.Path = r.saveA, r.saveB
	if err := f.write(cmd, c); err != nil {
		return err
	}
	if a.Interrupted {
		return errInterrupted
	}
	return nil
}

// workloadSpec parses one --run: a built-in benchmark with its flags, as
// observe takes them, or a command (optionally after --).
func workloadSpec(s string) (experiment.Spec, error) {
	words, err := splitWords(s)
	if err != nil {
		return experiment.Spec{}, err
	}
	if len(words) > 0 && words[0] == "--" {
		words = words[1:]
	}
	if len(words) == 0 {
		return experiment.Spec{}, errors.New("no workload: give fileio, sqlite or a command")
	}
	var bind targetBinder
	switch words[0] {
	case "fileio":
		bind = fileioTarget
	case "sqlite":
		bind = sqliteTarget
	default:
		return experiment.Spec{Argv: words}, nil
	}
	sub := &cobra.Command{Use: words[0], SilenceErrors: true, SilenceUsage: true}
	settings := bind(sub)
	if err := sub.ParseFlags(words[1:]); err != nil {
		return experiment.Spec{}, err
	}
	if rest := sub.Flags().Args(); len(rest) > 0 {
		return experiment.Spec{}, fmt.Errorf("unexpected %q after the %s flags", strings.Join(rest, " "), words[0])
	}
	t := settings()
	if err := target.Validate(&t); err != nil {
		return experiment.Spec{}, err
	}
	return experiment.Spec{Target: &t}, nil
}

// splitWords splits s as a POSIX shell splits words: on blanks, with single
// quotes, double quotes and backslashes (no expansions).
func splitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("a single quote is not closed")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errors.New("a double quote is not closed")
			}
			inWord = true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
