package htmlreport

import (
	"fmt"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/report"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// workloadSection shows what ran, with every setting, and what it measured:
// throughput and latency per op or phase, with the latency histograms.
func workloadSection(run *model.Run) *section {
	s := &section{ID: "workload", Title: "Workload and result"}
	t := run.Target
	switch {
	case t.FileIO != nil:
		s.settings(settingsKV(t.FileIO))
	case t.SQLite != nil:
		s.settings(settingsKV(t.SQLite))
	case t.Command != nil:
		s.kvs([]kv{{"argv", strings.Join(t.Command.Argv, " ")}, {"dir", t.Command.Dir}})
	case t.PID != nil:
		s.kvs([]kv{{"pid", fmt.Sprint(t.PID.PID)}, {"comm", t.PID.Comm}, {"cmdline", t.PID.Cmdline},
			{"duration", secsOrZero(t.PID.DurationSec)}})
	}
	if len(t.Notices) > 0 {
		s.h3("What this run does that you might not expect")
		s.list(t.Notices)
	}
	r := run.Result
	if r == nil {
		s.h3("Result")
		s.why("no result: the run ended before its measured phase")
		return s
	}
	switch {
	case r.FileIO != nil:
		fileioResult(s, r)
	case r.SQLite != nil:
		sqliteResult(s, r)
	case r.Command != nil:
		s.h3("Result")
		c := r.Command
		switch {
		case t.Kind == "pid" && !c.Exited:
			s.p(fmt.Sprintf("observed for %s; the process is still running", secs(c.WallSec)))
		case t.Kind == "pid":
			s.p(fmt.Sprintf("the process exited after %s of observation", secs(c.WallSec)))
		case c.Signal != "":
			s.p(fmt.Sprintf("killed by %s after %s", c.Signal, secs(c.WallSec)))
		default:
			s.p(fmt.Sprintf("exit status %d after %s", c.ExitCode, secs(c.WallSec)))
		}
		s.why("no latency histogram: a command's own operations are not visible to perfsleuth (its syscalls are, with --syscalls)")
	}
	return s
}

func secsOrZero(v float64) string {
	if v == 0 {
		return "0 (until it exits)"
	}
	return secs(v)
}

func fileioResult(s *section, r *model.Result) {
	p := r.FileIO.Prepare
	prep := fmt.Sprintf("prepare: %d file(s), %s in %s, not measured", p.Files, units.FormatSize(p.Bytes), secs(p.DurationSec))
	if p.Reused {
		prep = fmt.Sprintf("prepare: reused %d kept file(s), %s", p.Files, units.FormatSize(p.Bytes))
	}
	s.h3(fmt.Sprintf("Result: %s measured", secs(r.DurationSec)))
	s.p(prep)
	tb := newTable("op", "ops/s", "MiB/s", "ops", "bytes", "p50", "p90", "p99", "p99.9", "max")
	var figs []figure
	for _, op := range r.FileIO.Ops {
		mib := fmt.Sprintf("%.1f", op.MiBPerSec)
		bytes := units.FormatSize(op.Bytes)
		if op.Bytes == 0 {
			mib, bytes = "-", "-"
		}
		row := []cell{{Text: op.Op}, {Text: rate(op.OpsPerSec)}, {Text: mib}, {Text: units.FormatCount(op.Count)}, {Text: bytes}}
		tb.add(append(row, latencyCells(op.Latency)...)...)
		figs = append(figs, latencyFigure("latency-"+op.Op, op.Op+" latency", op.Latency, opColor(op.Op)))
	}
	s.table(tb.t)
	if n := len(r.FileIO.ThreadOps); n > 1 {
		s.p("per thread: " + report.Fairness(r.FileIO.ThreadOps))
	}
	s.h3("Latency of the benchmark's operations")
	s.figs(figs...)
}

func sqliteResult(s *section, r *model.Result) {
	s.h3(fmt.Sprintf("Result: %s measured", secs(r.DurationSec)))
	tb := newTable("phase", "tx/s", "transactions", "statements", "p50", "p90", "p99", "p99.9", "max", "rows after")
	var figs []figure
	for _, p := range r.SQLite.Phases {
		row := []cell{{Text: p.Phase}, {Text: rate(p.TxPerSec)}, {Text: units.FormatCount(p.Transactions)}, {Text: units.FormatCount(p.Statements)}}
		row = append(row, latencyCells(p.Latency)...)
		tb.add(append(row, cell{Text: units.FormatCount(p.RowsAfter)})...)
		figs = append(figs, latencyFigure("latency-"+p.Phase, p.Phase+" transaction latency", p.Latency, CategoryColor(model.CatCPU)))
	}
	tb.t.Foot = "latency is per transaction; rows after is the table's row count when the phase ended"
	s.table(tb.t)
	s.h3("Latency of the transactions")
	s.figs(figs...)
}

// opColor colours a fileio op as the category its time falls in.
func opColor(op string) string {
	switch op {
	case "read":
		return CategoryColor(model.CatStorageRead)
	case "write":
		return CategoryColor(model.CatStorageWrite)
	}
	return CategoryColor(model.CatStorageSync)
}

func latencyCells(l model.Latency) []cell {
	if l.Count == 0 {
		return []cell{{Text: "-"}, {Text: "-"}, {Text: "-"}, {Text: "-"}, {Text: "-"}}
	}
	f := func(v int64) cell { return cell{Text: ns(float64(v))} }
	return []cell{f(l.P50Ns), f(l.P90Ns), f(l.P99Ns), f(l.P999Ns), f(l.MaxNs)}
}

// latencyFigure draws an HDR latency summary's buckets with its percentiles.
func latencyFigure(name, caption string, l model.Latency, color string) figure {
	sub := fmt.Sprintf("%s values, mean %s", units.FormatCount(l.Count), ns(l.MeanNs))
	if len(l.Buckets) == 0 {
		sub = "no buckets in the record (made before they were kept)"
	}
	if l.Count > 0 {
		sub += fmt.Sprintf("; p50 %s, p99 %s, p99.9 %s", ns(float64(l.P50Ns)), ns(float64(l.P99Ns)), ns(float64(l.P999Ns)))
	}
	return figure{Caption: caption, Sub: sub, Chart: Histogram(chartName(name), nsBuckets(l.Buckets), HistogramOptions{
		Title: caption, Unit: UnitNs, Color: color,
		Markers: []Marker{{"p50", float64(l.P50Ns)}, {"p99", float64(l.P99Ns)}, {"p99.9", float64(l.P999Ns)}},
	})}
}

func nsBuckets(bs []model.Bucket) []HistBucket {
	out := make([]HistBucket, 0, len(bs))
	for _, b := range bs {
		out = append(out, HistBucket{Low: float64(b.LowNs), High: float64(b.HighNs), Count: b.Count})
	}
	return out
}

func rangeBuckets(rs []model.Range) []HistBucket {
	out := make([]HistBucket, 0, len(rs))
	for _, r := range rs {
		out = append(out, HistBucket{Low: float64(r.Low), High: float64(r.High), Count: r.Count})
	}
	return out
}

// settingsKV lists a settings struct's fields as the terminal does.
func settingsKV(v any) []kv {
	var out []kv
	for _, s := range report.Settings(v) {
		out = append(out, kv{s.Name, s.Value})
	}
	return out
}

// tableBuilder fills a table row by row.
type tableBuilder struct{ t *table }

// newTable starts a table; the first column is text, the others numbers,
// unless a header starts with "~" (text; the mark is dropped).
func newTable(head ...string) *tableBuilder {
	t := &table{}
	for i, h := range head {
		num := i > 0
		if strings.HasPrefix(h, "~") {
			h, num = h[1:], false
		}
		t.Head = append(t.Head, h)
		t.Num = append(t.Num, num)
	}
	return &tableBuilder{t}
}

// add appends a row, padded or cut to the header's width.
func (b *tableBuilder) add(cells ...cell) {
	row := make([]cell, len(b.t.Head))
	copy(row, cells)
	b.t.Rows = append(b.t.Rows, row)
}
