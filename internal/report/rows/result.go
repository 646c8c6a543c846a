package rows

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// Result is what the workload measured.
type Result struct {
	// None is true when the run ended before its measured phase.
	None bool
	// Kind is the workload's: "fileio", "sqlite" or "command" (a command
	// or a process).
	Kind        string
	DurationSec float64
	// Prepare says how fileio's files were made (not measured).
	Prepare string
	Ops     []OpRow
	// Fairness compares the threads' op counts, with more than one thread.
	Fairness string
	// Engine says how fileio's threads issued their IO, "" for psync;
	// Depths how many requests they had in flight (DepthsOf).
	Engine, Depths string
	// Verify is what --verify found, in words ("" without it).
	Verify string
	Phases []PhaseRow
	// Command says how a command or process ended, or that it still runs.
	Command string
	// Reported is the result the command printed itself, when perfsleuth
	// read one (nil otherwise: the wall time is then the result).
	Reported *Reported
}

// Reported is a command's own result: its primary figure, then each
// figure it printed.
type Reported struct {
	// Headline is "fio reported read IOPS 18,033/s".
	Headline string
	Rows     []ReportedRow
	// More counts the figures left out of Rows (all are in the record).
	More int
}

// ReportedRow is one figure a command printed.
type ReportedRow struct{ Job, Name, Value string }

// reportedRows is how many of a command's figures the views list.
const reportedRows = 24

// ReportedOf is the views' form of a command's own result, nil without one.
func ReportedOf(r *model.ReportedResult) *Reported {
	p, ok := r.PrimaryMetric()
	if !ok {
		return nil
	}
	how := r.Tool + " reported"
	if r.Tool == "metric" {
		how = "the command's output gave"
	}
	out := &Reported{Headline: fmt.Sprintf("%s %s %s", how, p.Name, ReportedValue(p))}
	for i, m := range r.Metrics {
		if i == r.Primary {
			continue
		}
		if len(out.Rows) == reportedRows {
			out.More = len(r.Metrics) - 1 - reportedRows
			break
		}
		out.Rows = append(out.Rows, ReportedRow{Job: m.Job, Name: m.Name, Value: ReportedValue(m)})
	}
	return out
}

// ReportedValue prints a command's figure in its unit: a rate with
// separators, bytes per second in binary units, a latency as a duration.
func ReportedValue(m model.ReportedMetric) string {
	switch m.Unit {
	case "s":
		return units.FormatNs(m.Value * 1e9)
	case "B/s":
		return units.FormatSize(int64(m.Value+0.5)) + "/s"
	case "":
		return strconv.FormatFloat(m.Value, 'g', 6, 64)
	}
	return Rate(m.Value) + " " + m.Unit
}

// OpRow is one fileio op: its throughput and latency.
type OpRow struct {
	Op string
	// Rate is ops per second; MiBPerSec is "-" for an op that moves no
	// bytes (fsync).
	Rate, MiBPerSec string
	Count, Bytes    int64
	Latency         Latency
	// Submit and Complete split Latency for an asynchronous engine
	// (fio's slat and clat); nil for psync.
	Submit, Complete *Latency
}

// PhaseRow is one sqlite phase: its transactions and their latency.
type PhaseRow struct {
	Phase                               string
	Rate                                string
	Transactions, Statements, RowsAfter int64
	Latency                             Latency
}

// Latency is a latency summary's five columns (p50, p90, p99, p99.9,
// max), "-" without values, and the summary itself for its histogram.
type Latency struct {
	Cols [5]string
	Raw  model.Latency
}

func latencyOf(l model.Latency) Latency {
	if l.Count == 0 {
		return Latency{Cols: [5]string{"-", "-", "-", "-", "-"}, Raw: l}
	}
	f := func(ns int64) string { return units.FormatNs(float64(ns)) }
	return Latency{Cols: [5]string{f(l.P50Ns), f(l.P90Ns), f(l.P99Ns), f(l.P999Ns), f(l.MaxNs)}, Raw: l}
}

// EngineOf says how the fileio threads issued their IO: "" for psync
// (and records from before the choice), else "io_uring, up to 16 in
// flight per thread, 1 per submit".
func EngineOf(c *model.FileIOConfig) string {
	if c == nil || c.Engine() == "psync" {
		return ""
	}
	return fmt.Sprintf("%s, up to %d in flight per thread, %d per submit", c.Engine(), c.Depth(), c.DepthBatch())
}

// DepthsOf says how many requests the threads had in flight after their
// submits, as shares of the submits ("1: 2%, 2-3: 5%, 4-7: 13%, 8-15:
// 80%", fio's IO depths in powers of two); "" without.
func DepthsOf(d []int64) string {
	var total int64
	for _, c := range d {
		total += c
	}
	if total == 0 {
		return ""
	}
	var parts []string
	for lo := 1; lo < len(d); lo *= 2 {
		var n int64
		for i := lo; i < min(2*lo, len(d)); i++ {
			n += d[i]
		}
		if n == 0 {
			continue
		}
		label := strconv.Itoa(lo)
		if hi := min(2*lo, len(d)) - 1; hi > lo {
			label += "-" + strconv.Itoa(hi)
		}
		parts = append(parts, fmt.Sprintf("%s: %.0f%%", label, 100*float64(n)/float64(total)))
	}
	return strings.Join(parts, ", ")
}

// ResultOf builds the result of a run.
func ResultOf(run *model.Run) Result {
	r := run.Result
	if r == nil {
		return Result{None: true}
	}
	out := Result{DurationSec: r.DurationSec}
	switch {
	case r.FileIO != nil:
		out.Kind = "fileio"
		p := r.FileIO.Prepare
		out.Prepare = fmt.Sprintf("prepare: %d file(s), %s in %s, not measured", p.Files, units.FormatSize(p.Bytes), Secs(p.DurationSec))
		if p.Reused {
			out.Prepare = fmt.Sprintf("prepare: reused %d kept file(s), %s", p.Files, units.FormatSize(p.Bytes))
		}
		for _, op := range r.FileIO.Ops {
			mib := fmt.Sprintf("%.1f", op.MiBPerSec)
			if op.Bytes == 0 {
				mib = "-"
			}
			row := OpRow{Op: op.Op, Rate: Rate(op.OpsPerSec), MiBPerSec: mib, Count: op.Count, Bytes: op.Bytes,
				Latency: latencyOf(op.Latency)}
			if op.SubmitLatency != nil && op.CompleteLatency != nil {
				sl, cl := latencyOf(*op.SubmitLatency), latencyOf(*op.CompleteLatency)
				row.Submit, row.Complete = &sl, &cl
			}
			out.Ops = append(out.Ops, row)
		}
		out.Engine, out.Depths = EngineOf(run.Target.FileIO), DepthsOf(r.FileIO.Depths)
		if v := r.FileIO.Verify; v != nil {
			out.Verify = fmt.Sprintf("%s blocks read back after the run, all as written (offset and CRC-32C)", units.FormatCount(v.Blocks))
			if v.Bad > 0 {
				out.Verify = fmt.Sprintf("%s of the %s blocks read back after the run were not as written; the first: %s", units.FormatCount(v.Bad), units.FormatCount(v.Blocks), v.First)
			}
		}
		if len(r.FileIO.ThreadOps) > 1 {
			out.Fairness = Fairness(r.FileIO.ThreadOps)
		}
	case r.SQLite != nil:
		out.Kind = "sqlite"
		for _, p := range r.SQLite.Phases {
			out.Phases = append(out.Phases, PhaseRow{Phase: p.Phase, Rate: Rate(p.TxPerSec), Transactions: p.Transactions,
				Statements: p.Statements, RowsAfter: p.RowsAfter, Latency: latencyOf(p.Latency)})
		}
	case r.Command != nil:
		out.Kind = "command"
		c := r.Command
		switch {
		case run.Target.Kind == "pid" && !c.Exited:
			out.Command = fmt.Sprintf("observed for %s; the process is still running", Secs(c.WallSec))
		case run.Target.Kind == "pid":
			out.Command = fmt.Sprintf("the process exited after %s of observation", Secs(c.WallSec))
		case c.Signal != "":
			out.Command = fmt.Sprintf("killed by %s after %s", c.Signal, Secs(c.WallSec))
		default:
			out.Command = fmt.Sprintf("exit status %d after %s", c.ExitCode, Secs(c.WallSec))
		}
		out.Reported = ReportedOf(c.Reported)
	}
	return out
}

// Fairness summarises per-thread op counts: min, max and their spread.
func Fairness(ops []int64) string {
	lo, hi, sum := ops[0], ops[0], int64(0)
	for _, v := range ops {
		lo, hi, sum = min(lo, v), max(hi, v), sum+v
	}
	mean := float64(sum) / float64(len(ops))
	spread := 0.0
	if mean > 0 {
		spread = float64(hi-lo) / mean * 100
	}
	return fmt.Sprintf("%d threads did %s to %s reads+writes (spread %.0f%%)", len(ops), units.FormatCount(lo), units.FormatCount(hi), spread)
}
