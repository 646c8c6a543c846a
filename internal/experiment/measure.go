package experiment

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/stats"
	"github.com/perfsleuth/perfsleuth/internal/target"
	"github.com/perfsleuth/perfsleuth/internal/toolresult"
)

// measureOf says what a run's number will be.
func measureOf(spec Spec) model.Measure {
	switch {
	case spec.Target != nil && spec.Target.Kind == "fileio":
		return model.Measure{Name: spec.Target.FileIO.RW + " ops/s", Unit: "ops/s", Source: "throughput", HigherIsBetter: true}
	case spec.Target != nil && spec.Target.Kind == "null":
		return model.Measure{Name: "null ops/s", Unit: "ops/s", Source: "throughput", HigherIsBetter: true}
	case spec.Target != nil:
		return model.Measure{Name: "transactions/s", Unit: "tx/s", Source: "throughput", HigherIsBetter: true}
	case spec.Metric != nil:
		return model.Measure{Name: spec.Metric.String(), Source: "metric", HigherIsBetter: !spec.MetricLowerBetter}
	}
	return model.Measure{Name: "wall time", Unit: "s", Source: "wall_time"}
}

// value is a finished run's measure.
func (s *side) value(run *model.Run, out *outputTail) (float64, error) {
	res := run.Result
	if res == nil {
		return 0, fmt.Errorf("the run has no result")
	}
	switch {
	case res.FileIO != nil:
		var n int64
		for _, op := range res.FileIO.Ops {
			if op.Op == "read" || op.Op == "write" {
				n += op.Count
			}
		}
		if res.DurationSec <= 0 || n == 0 {
			return 0, fmt.Errorf("the benchmark did no reads or writes")
		}
		return float64(n) / res.DurationSec, nil
	case res.SQLite != nil:
		var tx int64
		var sec float64
		for _, p := range res.SQLite.Phases {
			tx += p.Transactions
			sec += p.DurationSec
		}
		if sec <= 0 || tx == 0 {
			return 0, fmt.Errorf("the benchmark ran no transactions")
		}
		return float64(tx) / sec, nil
	case res.Null != nil:
		if res.DurationSec <= 0 || res.Null.Ops == 0 {
			return 0, fmt.Errorf("the benchmark did no operations")
		}
		return float64(res.Null.Ops) / res.DurationSec, nil
	case res.Command != nil:
		c := res.Command
		if c.ExitCode != 0 {
			return 0, fmt.Errorf("%s exited with status %d%s: diagnose compares runs that succeed; its last output:\n%s", s.argv[0], c.ExitCode, target.SignalSuffix(c.Signal), out.tail())
		}
		if s.reads {
			return s.reported(c, out)
		}
		if s.metric == nil {
			return c.WallSec, nil
		}
		vals := out.values()
		if len(vals) == 0 {
			return 0, fmt.Errorf("--metric %q matched no line of %s's output (its first group must be a number); its last output:\n%s", s.metric, s.argv[0], out.tail())
		}
		return stats.Median(vals), nil
	}
	return 0, fmt.Errorf("the run has no result")
}

// reported is the result a known tool printed: the figure its first run
// reported becomes the side's measure, and every later run must report
// the same figure.
func (s *side) reported(c *model.CommandResult, out *outputTail) (float64, error) {
	p, ok := c.Reported.PrimaryMetric()
	if !ok {
		return 0, fmt.Errorf("%s printed no result perfsleuth reads (docs/tool-results.md): give --metric REGEX to name the number to compare; its last output:\n%s", s.argv[0], out.tail())
	}
	m := p.Measure()
	switch {
	case s.measure.Source != "reported":
		s.measure = m
	case s.measure != m:
		return 0, fmt.Errorf("%s reported %s in one run and %s in another: the runs measure different things", s.argv[0], s.measure.Name, p.Name)
	}
	if !(p.Value > 0) {
		return 0, fmt.Errorf("%s reported %s of %v: no run to compare", s.argv[0], p.Name, p.Value)
	}
	return p.Value, nil
}

// outputTail takes a command's output: it keeps the last lines (for error
// messages) and the numbers a --metric regex finds in every line.
type outputTail struct {
	mu      sync.Mutex
	re      *regexp.Regexp
	partial []byte
	last    []string
	vals    []float64
}

// outputTailLines is how many lines an error message quotes.
const outputTailLines = 10

func newOutputTail(re *regexp.Regexp) *outputTail { return &outputTail{re: re} }

func (o *outputTail) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.partial = append(o.partial, p...)
	for {
		i := bytes.IndexByte(o.partial, '\n')
		if i < 0 {
			break
		}
		o.line(string(o.partial[:i]))
		o.partial = o.partial[i+1:]
	}
	// A progress line redrawn with \r never ends: take it in pieces.
	if len(o.partial) > 64<<10 {
		o.line(string(o.partial))
		o.partial = o.partial[:0]
	}
	return len(p), nil
}

func (o *outputTail) line(l string) {
	for _, part := range strings.Split(l, "\r") {
		if o.re != nil {
			if v, ok := toolresult.Number(o.re, part); ok {
				o.vals = append(o.vals, v)
			}
		}
	}
	o.last = append(o.last, l)
	if len(o.last) > outputTailLines {
		o.last = o.last[1:]
	}
}

func (o *outputTail) values() []float64 {
	if o == nil {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.partial) > 0 {
		o.line(string(o.partial))
		o.partial = nil
	}
	return o.vals
}

func (o *outputTail) tail() string {
	if o == nil {
		return ""
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	lines := o.last
	if len(o.partial) > 0 {
		lines = append(lines, string(o.partial))
	}
	if len(lines) == 0 {
		return "  (none)"
	}
	return "  " + strings.Join(lines, "\n  ")
}

// cloneTarget copies a target deeply enough that a run cannot change the
// experiment's copy (the runner fills in directories and notices).
func cloneTarget(t model.Target) model.Target {
	if t.FileIO != nil {
		c := *t.FileIO
		t.FileIO = &c
	}
	if t.SQLite != nil {
		c := *t.SQLite
		c.Phases = append([]string(nil), c.Phases...)
		t.SQLite = &c
	}
	t.Notices = nil
	return t
}

// setTargetDir points the benchmark at the experiment's directory. fileio
// keeps its laid-out files between runs (fio reuses its files too); sqlite
// starts every run from an empty database, as its insert phase needs.
func setTargetDir(t *model.Target, dir string) {
	switch {
	case t.FileIO != nil:
		t.FileIO.Dir, t.FileIO.DirCreated, t.FileIO.Keep = dir, false, true
	case t.SQLite != nil:
		t.SQLite.Dir, t.SQLite.DirCreated, t.SQLite.Keep = dir, false, false
	}
}
