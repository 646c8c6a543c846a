package export

import (
	"bytes"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// expoFamily and expoSeries are what parseExposition reads back.
type expoFamily struct {
	typ, help string
	series    map[string]float64 // sample name + canonical labels -> value
}

// parseExposition reads the text back with expfmt.TextParser, the
// Prometheus libraries' own parser (it rejects a family's samples split
// up, a TYPE after samples, bad escapes, a series twice), and keys each
// series by its sample name and its labels sorted, e.g.
// `x_total{a="1",b="2"}`, with the values unescaped.
func parseExposition(t *testing.T, b []byte) map[string]*expoFamily {
	t.Helper()
	var p expfmt.TextParser
	parsed, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("expfmt cannot read the export: %v\n%s", err, b)
	}
	fams := map[string]*expoFamily{}
	for name, mf := range parsed {
		fam := &expoFamily{typ: strings.ToLower(mf.GetType().String()), help: mf.GetHelp(), series: map[string]float64{}}
		fams[name] = fam
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+strconv.Quote(l.GetValue()))
			}
			add := func(sample string, extra []string, v float64) {
				ls := append(slices.Clone(labels), extra...)
				slices.Sort(ls)
				key := sample + "{" + strings.Join(ls, ",") + "}"
				if _, dup := fam.series[key]; dup {
					t.Fatalf("series %s twice", key)
				}
				fam.series[key] = v
			}
			switch {
			case m.Counter != nil:
				add(name, nil, m.GetCounter().GetValue())
			case m.Gauge != nil:
				add(name, nil, m.GetGauge().GetValue())
			case m.Summary != nil:
				for _, q := range m.GetSummary().GetQuantile() {
					add(name, []string{"quantile=" + strconv.Quote(strconv.FormatFloat(q.GetQuantile(), 'g', -1, 64))}, q.GetValue())
				}
				add(name+"_sum", nil, m.GetSummary().GetSampleSum())
				add(name+"_count", nil, float64(m.GetSummary().GetSampleCount()))
			case m.Untyped != nil:
				add(name, nil, m.GetUntyped().GetValue())
			}
		}
	}
	return fams
}

// series builds a key as parseExposition makes it.
func series(name string, labels ...string) string {
	var ls []string
	for i := 0; i+1 < len(labels); i += 2 {
		ls = append(ls, labels[i]+"="+strconv.Quote(labels[i+1]))
	}
	sort.Strings(ls)
	return name + "{" + strings.Join(ls, ",") + "}"
}

// fullRun is stackRun with every part the Prometheus export reads.
func fullRun(t *testing.T) *model.Run {
	run := stackRun()
	run.Observation = loadTestdata(t, "observe-fileio").Observation
	ta := run.TimeAccounting
	ta.Syncs = []model.SyncCalls{{Kind: "fdatasync", Count: 500, TotalSec: 1.25}}
	// One path, two files (a journal made anew): one series, summed.
	ta.SyncedFiles = []model.SyncedFile{
		{Path: hostilePath, Dev: "8:1", Ino: 12, Count: 300, TotalSec: 0.75},
		{Path: hostilePath, Dev: "8:1", Ino: 13, Count: 200, TotalSec: 0.5},
	}
	ta.Syscalls = []model.SyscallStat{
		{TID: 101, Name: "pwrite64", Count: 10, TotalSec: 0.1},
		{TID: 100, Name: "pwrite64", Count: 5, Errors: 1, TotalSec: 0.05},
	}
	ta.Dropped = 3
	run.Result = &model.Result{DurationSec: 2, FileIO: &model.FileIOResult{Ops: []model.OpStats{{
		Op: "write", Count: 1000, Bytes: 4096000, OpsPerSec: 500, MiBPerSec: 1.953125,
		Latency: model.Latency{Count: 1000, MinNs: 1000, MeanNs: 2000, P50Ns: 1500, P90Ns: 3000, P99Ns: 9000, P999Ns: 20000, MaxNs: 50000},
	}}}}
	run.Storage = &model.StorageIO{
		Devices: []model.BlockDevice{{Name: "vda", Dev: "254:0", BusySec: 1.5, UtilPct: 75, Ops: []model.BlockOp{
			{Op: "write", Requests: 800, Bytes: 3276800, WorkloadRequests: 600, WritebackRequests: 200, QueueMeanSec: 0.0001, ServiceMeanSec: 0.002},
			{Op: "flush", Requests: 500},
		}}},
		Cache: &model.PageCache{Lookups: 100, ReadAdded: 25, HitRatio: 0.75, ThrottledSec: -1},
		Files: []model.FileIO{{Path: hostilePath, Writes: model.FileOps{Count: 1000, Bytes: 4096000}, BlockedSec: 0.2}},
	}
	run.Verdict = &model.Verdict{Primary: model.CatStorageSync, Summary: "sync-bound", Bottleneck: "io"}
	run.Findings = []model.Finding{{ID: "sync.dominant", Severity: "warning"}}
	run.Experiments = &model.Experiments{
		Measure:       model.Measure{Name: `ops "per" second`, Unit: "ops/s", Source: "throughput", HigherIsBetter: true},
		BaselineNoise: 0.02,
		Conditions: []model.Condition{
			{Name: "baseline", Median: 500, Runs: make([]model.ExperimentRun, 3)},
			{Name: "io-pressure", Resource: "io", Median: 250, Change: -0.5, Interval: [2]float64{-0.6, -0.4}, Class: "sensitive", Runs: make([]model.ExperimentRun, 3)},
		},
	}
	return run
}

func TestPrometheusValues(t *testing.T) {
	run := fullRun(t)
	b, err := Prometheus(run)
	if err != nil {
		t.Fatal(err)
	}
	fams := parseExposition(t, b)
	want := map[string]float64{
		series("perfsleuth_time_seconds_total", "category", "storage-sync"): 1.25,
		series("perfsleuth_time_seconds_total", "category", "cpu"):          0.5,
		series("perfsleuth_accounting_window_seconds"):                      2,
		series("perfsleuth_thread_time_seconds_total", "pid", "100", "tid", "101", "thread", hostileComm, "role", "worker", "idle", "false", "category", "storage-sync"): 1.25,
		series("perfsleuth_thread_time_seconds_total", "pid", "100", "tid", "100", "thread", "app", "role", "", "idle", "true", "category", "sleep"):                     1.9,
		series("perfsleuth_sync_calls_total", "kind", "fdatasync"):                                                                                     500,
		series("perfsleuth_sync_seconds_total", "kind", "fdatasync"):                                                                                   1.25,
		series("perfsleuth_file_syncs_total", "path", strings.ToValidUTF8(hostilePath, "\uFFFD")):                                                      500,
		series("perfsleuth_file_sync_seconds_total", "path", strings.ToValidUTF8(hostilePath, "\uFFFD")):                                               1.25,
		series("perfsleuth_file_written_bytes_total", "path", strings.ToValidUTF8(hostilePath, "\uFFFD")):                                              4096000,
		series("perfsleuth_syscalls_total", "syscall", "pwrite64"):                                                                                     15,
		series("perfsleuth_syscall_errors_total", "syscall", "pwrite64"):                                                                               1,
		series("perfsleuth_fileio_ops_total", "op", "write"):                                                                                           1000,
		series("perfsleuth_fileio_ops_per_second", "op", "write"):                                                                                      500,
		series("perfsleuth_fileio_bytes_per_second", "op", "write"):                                                                                    2048000,
		series("perfsleuth_fileio_latency_seconds", "op", "write", "quantile", "0.99"):                                                                 9e-6,
		series("perfsleuth_fileio_latency_seconds", "op", "write", "quantile", "1"):                                                                    5e-5,
		series("perfsleuth_fileio_latency_seconds_sum", "op", "write"):                                                                                 2e-3,
		series("perfsleuth_fileio_latency_seconds_count", "op", "write"):                                                                               1000,
		series("perfsleuth_block_requests_total", "device", "vda", "op", "flush"):                                                                      500,
		series("perfsleuth_block_writeback_requests_total", "device", "vda", "op", "write"):                                                            200,
		series("perfsleuth_block_service_mean_seconds", "device", "vda", "op", "write"):                                                                0.002,
		series("perfsleuth_block_utilization_ratio", "device", "vda"):                                                                                  0.75,
		series("perfsleuth_page_cache_hit_ratio"):                                                                                                      0.75,
		series("perfsleuth_probe_cpu_seconds_total"):                                                                                                   0.0125,
		series("perfsleuth_probe_dropped_events_total"):                                                                                                3,
		series("perfsleuth_experiment_median", "condition", "io-pressure", "measure", `ops "per" second`, "unit", "ops/s", "higher_is_better", "true"): 250,
		series("perfsleuth_experiment_change_ratio", "condition", "io-pressure", "resource", "io"):                                                     -0.5,
		series("perfsleuth_experiment_change_lower_ratio", "condition", "io-pressure", "resource", "io"):                                               -0.6,
		series("perfsleuth_experiment_runs", "condition", "baseline"):                                                                                  3,
		series("perfsleuth_verdict_info", "primary", "storage-sync", "secondary", "", "bottleneck", "io"):                                              1,
		series("perfsleuth_finding_info", "id", "sync.dominant", "severity", "warning"):                                                                1,
		series("perfsleuth_run_start_time_seconds"):                                                                                                    float64(run.StartedAt.Unix()),
		series("perfsleuth_observation_duration_seconds"):                                                                                              run.Observation.DurationSec,
		series("perfsleuth_process_storage_written_bytes_total"):                                                                                       float64(run.Observation.Totals.Process.WriteBytes),
		series("perfsleuth_disk_written_bytes_total", "device", run.Observation.Totals.Disks[0].Device):                                                float64(run.Observation.Totals.Disks[0].WriteBytes),
		series("perfsleuth_host_cpu_time_ratio", "cpu", "all", "mode", "iowait"):                                                                       run.Observation.Totals.CPUs[0].IOWait / 100,
	}
	got := map[string]float64{}
	for _, f := range fams {
		for k, v := range f.series {
			got[k] = v
		}
	}
	for k, v := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("missing %s", k)
		} else if !closeTo(g, v) {
			t.Errorf("%s = %v, want %v", k, g, v)
		}
	}
	// The baseline has no change against itself; an unknown throttle time
	// (-1) is no figure at all.
	for _, k := range []string{
		series("perfsleuth_experiment_change_ratio", "condition", "baseline", "resource", ""),
		series("perfsleuth_page_cache_throttled_seconds_total"),
	} {
		if _, ok := got[k]; ok {
			t.Errorf("%s should be absent", k)
		}
	}
	for name, f := range fams {
		if f.help == "" {
			t.Errorf("%s has no HELP", name)
		}
		if !strings.HasPrefix(name, "perfsleuth_") {
			t.Errorf("%s lacks the perfsleuth_ prefix", name)
		}
		if (f.typ == "counter") != strings.HasSuffix(name, "_total") {
			t.Errorf("%s is a %s: counters and only counters end in _total", name, f.typ)
		}
	}
	promtoolCheck(t, "full record", b)
}

// TestPrometheusPagesNotCounted: without --storage the per-page counts
// are absent, not 0; the figures measured either way are there.
func TestPrometheusPagesNotCounted(t *testing.T) {
	run := fullRun(t)
	run.Storage.Cache = &model.PageCache{HitRatio: -1, PagesNotCounted: true, FaultLookups: 7, WrittenBackBytes: 4096, ThrottledSec: -1}
	b, err := Prometheus(run)
	if err != nil {
		t.Fatal(err)
	}
	fams := parseExposition(t, b)
	for _, name := range []string{"perfsleuth_page_cache_hit_ratio", "perfsleuth_page_cache_lookups_total", "perfsleuth_page_cache_read_added_total",
		"perfsleuth_page_cache_other_added_total", "perfsleuth_page_cache_dirtied_total"} {
		if _, ok := fams[name]; ok {
			t.Errorf("%s is there: not counted must be absent, not 0", name)
		}
	}
	for _, name := range []string{"perfsleuth_page_cache_fault_lookups_total", "perfsleuth_page_cache_written_back_bytes_total"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("%s is missing: it is measured without --storage", name)
		}
	}
}

func TestPrometheusEveryRecord(t *testing.T) {
	for _, name := range []string{"observe-fileio", "bench-sqlite", "observe-command", "diagnose-lock", "observe-sqlite", "observe-detail", "diagnose-sqlite", "observe-stacks"} {
		t.Run(name, func(t *testing.T) {
			run := loadTestdata(t, name)
			b, err := Prometheus(run)
			if err != nil {
				t.Fatal(err)
			}
			fams := parseExposition(t, b)
			info := fams["perfsleuth_run_info"]
			if info == nil || len(info.series) != 1 {
				t.Fatalf("want one perfsleuth_run_info, got %v", info)
			}
			if run.Result != nil && run.Result.SQLite != nil {
				for _, p := range run.Result.SQLite.Phases {
					k := series("perfsleuth_sqlite_transactions_per_second", "phase", p.Phase)
					if v := fams["perfsleuth_sqlite_transactions_per_second"].series[k]; v != p.TxPerSec {
						t.Errorf("%s = %v, record %v", k, v, p.TxPerSec)
					}
					k = series("perfsleuth_sqlite_transaction_latency_seconds", "phase", p.Phase, "quantile", "0.5")
					if v := fams["perfsleuth_sqlite_transaction_latency_seconds"].series[k]; !closeTo(v, float64(p.Latency.P50Ns)/1e9) {
						t.Errorf("%s = %v, record %dns", k, v, p.Latency.P50Ns)
					}
				}
			}
			if ex := run.Experiments; ex != nil {
				for _, c := range ex.Conditions {
					k := series("perfsleuth_experiment_median", "condition", c.Name, "measure", ex.Measure.Name, "unit", ex.Measure.Unit, "higher_is_better", strconv.FormatBool(ex.Measure.HigherIsBetter))
					if v := fams["perfsleuth_experiment_median"].series[k]; v != c.Median {
						t.Errorf("%s = %v, record %v", k, v, c.Median)
					}
				}
			}
			if ta := run.TimeAccounting; ta != nil {
				for c, sec := range ta.Total {
					k := series("perfsleuth_time_seconds_total", "category", c)
					if v := fams["perfsleuth_time_seconds_total"].series[k]; v != sec {
						t.Errorf("%s = %v, record %v", k, v, sec)
					}
				}
			}
			promtoolCheck(t, name, b)
		})
	}
}

func TestPromText(t *testing.T) {
	fams := []*promFamily{
		{Name: "b_total", Type: promCounter, Help: "two\nlines \\ back", Metrics: []*promMetric{{Labels: []promLabel{{"l", "a\"b\\c\nd"}}, Value: 1e6}}},
		{Name: "a", Type: promGauge, Help: "h", Metrics: []*promMetric{{Value: -0.5}, {Labels: []promLabel{{"x", "inf"}}, Value: posInf}}},
		{Name: "c", Type: promSummary, Help: "s", Metrics: []*promMetric{{Quantiles: []promQuantile{{0.5, 2}}, Sum: 3, Count: 2}}},
		{Name: "empty", Type: promGauge, Help: "no samples: left out"},
	}
	b, err := writeText(fams)
	if err != nil {
		t.Fatal(err)
	}
	want := `# HELP a h
# TYPE a gauge
a -0.5
a{x="inf"} +Inf
# HELP b_total two\nlines \\ back
# TYPE b_total counter
b_total{l="a\"b\\c\nd"} 1e+06
# HELP c s
# TYPE c summary
c{quantile="0.5"} 2
c_sum 3
c_count 2
`
	if string(b) != want {
		t.Errorf("got:\n%s\nwant:\n%s", b, want)
	}
	for _, bad := range []*promFamily{
		{Name: "1bad", Type: promGauge, Metrics: []*promMetric{{}}},
		{Name: "ok", Type: promGauge, Metrics: []*promMetric{{Labels: []promLabel{{"a-b", ""}}}}},
		{Name: "ok", Type: promGauge, Metrics: []*promMetric{{Labels: []promLabel{{"__name__", ""}}}}},
	} {
		if _, err := writeText([]*promFamily{bad}); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

var posInf = func() float64 { f, _ := strconv.ParseFloat("+Inf", 64); return f }()

// promtoolCheck runs `promtool check metrics`, Prometheus's own linter and
// parser, which must find nothing to say. Without promtool the check is
// skipped, except in CI (CI set), where it must be installed.
func promtoolCheck(t *testing.T, what string, b []byte) {
	t.Helper()
	ran, out, err := promtool(t, b)
	if ran && (err != nil || len(bytes.TrimSpace(out)) > 0) {
		t.Errorf("%s: promtool check metrics: %v\n%s", what, err, out)
	}
}

func promtool(t *testing.T, b []byte) (ran bool, out []byte, err error) {
	t.Helper()
	path, lerr := exec.LookPath("promtool")
	if lerr != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool is not installed: CI must install it (Debian package prometheus)")
		}
		t.Log("promtool not on PATH: `promtool check metrics` skipped (apt-get install prometheus)")
		return false, nil, nil
	}
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = bytes.NewReader(b)
	out, err = cmd.CombinedOutput()
	return true, out, err
}

// The promtool check is not vacuous: it rejects what breaks the naming
// rules and what does not parse.
func TestPromtoolRejectsBadInput(t *testing.T) {
	for _, bad := range []string{
		"# HELP x_seconds h\n# TYPE x_seconds counter\nx_seconds 1\n", // counter without _total
		"# HELP x h\n# TYPE x gauge\nx{l=\"a\nb\"} 1\n",               // raw line break in a label value
	} {
		if ran, out, err := promtool(t, []byte(bad)); ran && err == nil {
			t.Errorf("promtool accepted %q: %s", bad, out)
		}
	}
}

// Every name the export can write, with the record that has them all,
// reads as Prometheus's naming guide asks (promtool checks the same, when
// it is there).
func TestPrometheusNames(t *testing.T) {
	b, err := Prometheus(fullRun(t))
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range parseExposition(t, b) {
		for _, bad := range []string{"_ms", "_sec_", "_percent", "_pct", "_kib", "_mb", "_milliseconds", "_microseconds"} {
			if strings.Contains(name+"_", bad) {
				t.Errorf("%s (%s): %q is not a base unit", name, f.typ, bad)
			}
		}
	}
}
