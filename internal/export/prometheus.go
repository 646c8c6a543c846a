package export

import (
	"slices"
	"strconv"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// The Prometheus export is the run's summary, one sample per figure, named
// as https://prometheus.io/docs/practices/naming/ asks: a perfsleuth_
// prefix, base units (seconds, bytes, ratios instead of percent), _total on
// counters. Figures that add up over the run (calls, bytes, seconds spent)
// are counters, which start at 0 with each run (perfsleuth_run_start_time_seconds
// says when); levels, rates, means, quantiles and ratios are gauges.
// docs/exports.md lists every metric.

// promPrefix starts every metric's name.
const promPrefix = "perfsleuth_"

// Prometheus writes the record's summary in the Prometheus text format.
func Prometheus(run *model.Run) ([]byte, error) {
	s := &promSet{fams: map[string]*promFamily{}}
	promRun(s, run)
	promResult(s, run.Result)
	promAccounting(s, run.TimeAccounting)
	promStorage(s, run.Storage)
	promObservation(s, run.Observation)
	promExperiments(s, run.Experiments)
	fams := make([]*promFamily, 0, len(s.fams))
	for _, f := range s.fams {
		fams = append(fams, f)
	}
	return writeText(fams)
}

// promSet gathers the families by name.
type promSet struct{ fams map[string]*promFamily }

func (s *promSet) family(name string, t promType, help string) *promFamily {
	name = promPrefix + name
	if f, ok := s.fams[name]; ok {
		return f
	}
	f := &promFamily{Name: name, Type: t, Help: help}
	s.fams[name] = f
	return f
}

func (s *promSet) counter(name, help string) *promFamily { return s.family(name, promCounter, help) }
func (s *promSet) gauge(name, help string) *promFamily   { return s.family(name, promGauge, help) }

// add sets the sample with these labels (name, value pairs). A counter
// sums the values given for the same labels (a path that several files
// had); a gauge keeps the first. It returns the sample.
func (f *promFamily) add(v float64, labels ...string) *promMetric {
	ls := make([]promLabel, 0, len(labels)/2)
	for i := 0; i+1 < len(labels); i += 2 {
		ls = append(ls, promLabel{labels[i], labels[i+1]})
	}
	for _, m := range f.Metrics {
		if slices.Equal(m.Labels, ls) {
			if f.Type == promCounter {
				m.Value += v
			}
			return m
		}
	}
	m := &promMetric{Labels: ls, Value: v}
	f.Metrics = append(f.Metrics, m)
	return m
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func itoa(i int) string { return strconv.Itoa(i) }

func promRun(s *promSet, run *model.Run) {
	source := "none"
	if run.TimeAccounting != nil {
		source = run.TimeAccounting.Source
	}
	s.gauge("run_info", "The run: what ran, where, and where its time accounting came from (always 1).").add(1,
		"target", run.Target.Kind, "version", run.Tool.Version, "hostname", run.Host.Hostname,
		"kernel", run.Host.Kernel, "arch", run.Host.Arch, "accounting", source)
	if !run.StartedAt.IsZero() {
		s.gauge("run_start_time_seconds", "When the run started, seconds since the Unix epoch; every counter started at 0 then.").
			add(float64(run.StartedAt.UnixNano()) / 1e9)
	}
	if !run.EndedAt.IsZero() {
		s.gauge("run_end_time_seconds", "When the run ended, seconds since the Unix epoch.").add(float64(run.EndedAt.UnixNano()) / 1e9)
	}
	s.gauge("run_interrupted", "1 when the run was stopped early (Ctrl-C, target died): the figures cover what ran until then.").
		add(boolValue(run.Interrupted))
	if v := run.Verdict; v != nil {
		s.gauge("verdict_info", "The time accounting's verdict (primary and close secondary category) and the bottleneck experiments showed (always 1).").
			add(1, "primary", v.Primary, "secondary", v.Secondary, "bottleneck", v.Bottleneck)
	}
	for _, f := range run.Findings {
		s.gauge("finding_info", "A finding of the analysis, ids in docs/findings.md (always 1).").add(1, "id", f.ID, "severity", f.Severity)
	}
}

func promResult(s *promSet, r *model.Result) {
	if r == nil {
		return
	}
	s.gauge("result_duration_seconds", "Wall time of the measured phase (prepare excluded).").add(r.DurationSec)
	if f := r.FileIO; f != nil {
		for _, op := range f.Ops {
			s.counter("fileio_ops_total", "Operations the fileio benchmark made, per op type.").add(float64(op.Count), "op", op.Op)
			s.counter("fileio_bytes_total", "Bytes the fileio benchmark read or wrote, per op type.").add(float64(op.Bytes), "op", op.Op)
			s.gauge("fileio_ops_per_second", "Throughput of the fileio benchmark, operations per second, per op type.").add(op.OpsPerSec, "op", op.Op)
			s.gauge("fileio_bytes_per_second", "Throughput of the fileio benchmark, bytes per second, per op type.").add(op.MiBPerSec*(1<<20), "op", op.Op)
			latencySummary(s, "fileio_latency_seconds", "Latency of one fileio operation, per op type (HDR histogram: quantile 0 is the minimum, 1 the maximum).", op.Latency, "op", op.Op)
		}
	}
	if q := r.SQLite; q != nil {
		for _, p := range q.Phases {
			s.counter("sqlite_transactions_total", "Transactions the sqlite benchmark committed, per phase.").add(float64(p.Transactions), "phase", p.Phase)
			s.counter("sqlite_statements_total", "Statements the sqlite benchmark ran, per phase.").add(float64(p.Statements), "phase", p.Phase)
			s.gauge("sqlite_transactions_per_second", "Throughput of the sqlite benchmark, transactions per second, per phase.").add(p.TxPerSec, "phase", p.Phase)
			s.gauge("sqlite_phase_duration_seconds", "Time of each sqlite phase (parameter generation excluded).").add(p.DurationSec, "phase", p.Phase)
			s.gauge("sqlite_rows", "Rows in the table when each sqlite phase ended.").add(float64(p.RowsAfter), "phase", p.Phase)
			latencySummary(s, "sqlite_transaction_latency_seconds", "Latency of one sqlite transaction, per phase (HDR histogram: quantile 0 is the minimum, 1 the maximum).", p.Latency, "phase", p.Phase)
		}
	}
	if c := r.Command; c != nil {
		s.gauge("command_exit_code", "Exit status of the observed command (-1: killed by a signal, or not perfsleuth's child).").add(float64(c.ExitCode))
		s.gauge("command_wall_seconds", "Wall time of the observed command.").add(c.WallSec)
	}
}

// latencySummary adds a latency distribution as a summary: the recorded
// quantiles, with the minimum and maximum as quantiles 0 and 1 (as Go's
// go_gc_duration_seconds does), the sum (mean × count) and the count.
func latencySummary(s *promSet, name, help string, l model.Latency, labels ...string) {
	if l.Count == 0 {
		return
	}
	f := s.family(name, promSummary, help)
	ls := make([]promLabel, 0, len(labels)/2)
	for i := 0; i+1 < len(labels); i += 2 {
		ls = append(ls, promLabel{labels[i], labels[i+1]})
	}
	f.Metrics = append(f.Metrics, &promMetric{
		Labels: ls,
		Quantiles: []promQuantile{
			{0, float64(l.MinNs) / 1e9}, {0.5, float64(l.P50Ns) / 1e9}, {0.9, float64(l.P90Ns) / 1e9},
			{0.99, float64(l.P99Ns) / 1e9}, {0.999, float64(l.P999Ns) / 1e9}, {1, float64(l.MaxNs) / 1e9},
		},
		Sum:   l.MeanNs * float64(l.Count) / 1e9,
		Count: uint64(l.Count),
	})
}

func promAccounting(s *promSet, ta *model.TimeAccounting) {
	if ta == nil {
		return
	}
	s.gauge("accounting_window_seconds", "Length of the time accounting's window.").add(ta.WindowSec)
	for _, c := range model.Categories {
		if v, ok := ta.Total[c]; ok {
			s.counter("time_seconds_total", "Seconds the busy threads spent in each category (idle threads left out); docs/probes.md says how each is decided.").add(v, "category", c)
		}
	}
	s.counter("cpu_seconds_total", "CPU seconds of the busy threads, per mode.").add(ta.UserSec, "mode", "user")
	s.counter("cpu_seconds_total", "").add(ta.SystemSec, "mode", "system")
	for _, t := range ta.Threads {
		for _, c := range model.Categories {
			v, ok := t.Seconds[c]
			if !ok {
				continue
			}
			s.counter("thread_time_seconds_total", "Seconds each thread spent in each category; idle=true marks a thread that waited for work the whole window (left out of perfsleuth_time_seconds_total), tid 0 the exited threads of a process summed.").
				add(v, "pid", itoa(t.PID), "tid", itoa(t.TID), "thread", t.Comm, "role", t.Role, "idle", strconv.FormatBool(t.Idle), "category", c)
		}
	}
	s.counter("threads_created_total", "Threads the workload created in the window.").add(float64(ta.ThreadsCreated))
	s.counter("threads_exited_total", "Threads of the workload that exited in the window.").add(float64(ta.ThreadsExited))
	s.counter("processes_created_total", "Processes the workload created in the window.").add(float64(ta.ProcessesCreated))
	s.gauge("peak_threads", "Most threads of the workload alive at once.").add(float64(ta.PeakThreads))
	for _, c := range ta.Syncs {
		s.counter("sync_calls_total", "Sync calls (fsync, fdatasync, msync, O_SYNC/O_DSYNC writes as write, ...), per kind.").add(float64(c.Count), "kind", c.Kind)
		s.counter("sync_seconds_total", "Seconds in sync calls, per kind.").add(c.TotalSec, "kind", c.Kind)
	}
	for _, f := range ta.SyncedFiles {
		s.counter("file_syncs_total", "Sync calls per file path (files that had the same path summed).").add(float64(f.Count), "path", f.Path)
		s.counter("file_sync_seconds_total", "Seconds in sync calls per file path.").add(f.TotalSec, "path", f.Path)
	}
	for _, c := range ta.Syscalls {
		s.counter("syscalls_total", "Syscalls of the workload's threads, per syscall (with --syscalls).").add(float64(c.Count), "syscall", c.Name)
		s.counter("syscall_errors_total", "Syscalls that returned an error, per syscall.").add(float64(c.Errors), "syscall", c.Name)
		s.counter("syscall_seconds_total", "Seconds in syscalls, per syscall.").add(c.TotalSec, "syscall", c.Name)
	}
	if ta.Source == "ebpf" {
		s.counter("probe_cpu_seconds_total", "CPU seconds the eBPF programs took (estimated: runs × cost calibrated on the host), over all CPUs.").add(ta.ProbeCPUSec)
		s.counter("probe_runs_total", "Runs of the eBPF time-accounting programs, machine-wide.").add(float64(ta.ProbeRuns))
		s.counter("probe_dropped_events_total", "Events the time-accounting probe could not record (full maps); the accounting is exact only at 0.").add(float64(ta.Dropped))
		for _, p := range ta.Programs {
			s.counter("probe_program_runs_total", "Runs of each eBPF program, machine-wide.").add(float64(p.Runs), "program", p.Name)
		}
	}
}

func promExperiments(s *promSet, ex *model.Experiments) {
	if ex == nil {
		return
	}
	m := ex.Measure
	s.gauge("experiment_baseline_noise_ratio", "Largest relative deviation of a baseline run from the baseline median.").add(ex.BaselineNoise)
	s.gauge("experiment_incomplete", "1 when the experiment stopped early: conditions hold only the runs that finished.").add(boolValue(ex.Incomplete))
	s.gauge("experiment_warmup", "The warm-up run's measure (not counted), in the unit its label says.").add(ex.Warmup, "measure", m.Name, "unit", m.Unit)
	for _, c := range ex.Conditions {
		s.gauge("experiment_median", "Median measure of each condition's runs, in the unit its label says; higher_is_better tells which way is better.").
			add(c.Median, "condition", c.Name, "measure", m.Name, "unit", m.Unit, "higher_is_better", strconv.FormatBool(m.HigherIsBetter))
		s.gauge("experiment_runs", "Runs each condition got.").add(float64(len(c.Runs)), "condition", c.Name)
		if c.Resource == "" { // baseline: no change against itself
			continue
		}
		s.gauge("experiment_change_ratio", "Relative change in performance against baseline, from the medians (negative: slower).").add(c.Change, "condition", c.Name, "resource", c.Resource)
		s.gauge("experiment_change_lower_ratio", "Lower end of the 95% bootstrap interval of the change.").add(c.Interval[0], "condition", c.Name, "resource", c.Resource)
		s.gauge("experiment_change_upper_ratio", "Upper end of the 95% bootstrap interval of the change.").add(c.Interval[1], "condition", c.Name, "resource", c.Resource)
		s.gauge("experiment_condition_info", "How each condition classed its resource: sensitive, insensitive or inconclusive (always 1).").
			add(1, "condition", c.Name, "resource", c.Resource, "class", c.Class, "settings", strings.Join(c.Settings, "; "))
	}
}
