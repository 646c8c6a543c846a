package htmlreport

import (
	"fmt"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/report/rows"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// workloadSection shows what ran, with every setting, and what it measured:
// throughput and latency per op or phase, with the latency histograms.
func workloadSection(run *model.Run) *section {
	s := &section{ID: "workload", Title: "Workload and result"}
	t := run.Target
	set, dur := rows.TargetSettings(t)
	k := settingsKV(set)
	if dur != nil {
		k = append(k, kv{"duration", secsOrZero(*dur)})
	}
	switch {
	case t.FileIO != nil || t.SQLite != nil:
		s.settings(k)
	case k != nil:
		s.kvs(k)
	}
	if len(t.Notices) > 0 {
		s.h3("What this run does that you might not expect")
		s.list(t.Notices)
	}
	r := rows.ResultOf(run)
	switch r.Kind {
	case "":
		if r.None {
			s.h3("Result")
			s.why("no result: the run ended before its measured phase")
		}
	case "fileio":
		fileioResult(s, r)
	case "sqlite":
		sqliteResult(s, r)
	case "command":
		s.h3("Result")
		if rp := r.Reported; rp != nil {
			s.p(rp.Headline)
			if len(rp.Rows) > 0 {
				tb := newTable("~job", "~figure", "value")
				for _, row := range rp.Rows {
					tb.add(cell{Text: row.Job}, cell{Text: row.Name}, cell{Text: row.Value})
				}
				s.table(tb.t)
			}
			if rp.More > 0 {
				s.why(fmt.Sprintf("%d more figures in the JSON record", rp.More))
			}
		}
		s.p(r.Command)
		if r.Reported == nil {
			s.why("no latency histogram: a command's own operations are not visible to perfsleuth (its syscalls are, with --syscalls); fio, sysbench, pgbench and redis-benchmark results are read from their output, and --metric reads another's")
		}
	}
	return s
}

func secsOrZero(v float64) string {
	if v == 0 {
		return "0 (until it exits)"
	}
	return rows.Secs(v)
}

func fileioResult(s *section, r rows.Result) {
	s.h3(fmt.Sprintf("Result: %s measured", rows.Secs(r.DurationSec)))
	s.p(r.Prepare)
	tb := newTable("op", "ops/s", "MiB/s", "ops", "bytes", "p50", "p90", "p99", "p99.9", "max")
	var figs []figure
	for _, op := range r.Ops {
		bytes := units.FormatSize(op.Bytes)
		if op.Bytes == 0 {
			bytes = "-"
		}
		row := []cell{{Text: op.Op}, {Text: op.Rate}, {Text: op.MiBPerSec}, {Text: units.FormatCount(op.Count)}, {Text: bytes}}
		tb.add(append(row, latencyCells(op.Latency)...)...)
		if op.Submit != nil {
			blank := []cell{{Text: ""}, {Text: ""}, {Text: ""}, {Text: ""}}
			tb.add(append([]cell{{Text: op.Op + ": submit"}}, append(blank, latencyCells(*op.Submit)...)...)...)
			tb.add(append([]cell{{Text: op.Op + ": complete"}}, append(blank, latencyCells(*op.Complete)...)...)...)
		}
		figs = append(figs, latencyFigure("latency-"+op.Op, op.Op+" latency", op.Latency.Raw, opColor(op.Op)))
	}
	s.table(tb.t)
	if r.Engine != "" {
		s.p("engine: " + r.Engine)
	}
	if r.Depths != "" {
		s.p("in flight after each submit: " + r.Depths)
	}
	if r.Verify != "" {
		s.p("verify: " + r.Verify)
	}
	if r.Fairness != "" {
		s.p("per thread: " + r.Fairness)
	}
	s.h3("Latency of the benchmark's operations")
	s.figs(figs...)
}

func sqliteResult(s *section, r rows.Result) {
	s.h3(fmt.Sprintf("Result: %s measured", rows.Secs(r.DurationSec)))
	tb := newTable("phase", "tx/s", "transactions", "statements", "p50", "p90", "p99", "p99.9", "max", "rows after")
	var figs []figure
	for _, p := range r.Phases {
		row := []cell{{Text: p.Phase}, {Text: p.Rate}, {Text: units.FormatCount(p.Transactions)}, {Text: units.FormatCount(p.Statements)}}
		row = append(row, latencyCells(p.Latency)...)
		tb.add(append(row, cell{Text: units.FormatCount(p.RowsAfter)})...)
		figs = append(figs, latencyFigure("latency-"+p.Phase, p.Phase+" transaction latency", p.Latency.Raw, CategoryColor(model.CatCPU)))
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

func latencyCells(l rows.Latency) []cell {
	out := make([]cell, len(l.Cols))
	for i, c := range l.Cols {
		out[i] = cell{Text: c}
	}
	return out
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

func ns(v float64) string { return units.FormatNs(v) }

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

// settingsKV lists settings as the terminal does, one row each.
func settingsKV(set []rows.Setting) []kv {
	var out []kv
	for _, s := range set {
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
