package export

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// The Trace Event Format ("JSON object format") that chrome://tracing and
// Perfetto's UI open:
// https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU
// Timestamps are microseconds from the start of the observation window.
// Counter events ("C") show as one track per argument, named after the
// event and the argument; complete events ("X") as slices; metadata ("M")
// names the processes and threads the tracks belong to.

// The trace's processes are not the workload's: they group the tracks.
// The workload's pids and tids are in the names.
const (
	tracePIDWorkload = 1
	tracePIDCPUs     = 2
	tracePIDDisks    = 3
)

// Threads of tracePIDWorkload that hold slices.
const (
	traceTIDWindow = 1
	traceTIDRun    = 2
	traceTIDPhases = 3
)

type traceEvent struct {
	Name string   `json:"name"`
	Cat  string   `json:"cat,omitempty"`
	Ph   string   `json:"ph"`
	Ts   float64  `json:"ts"`
	Dur  *float64 `json:"dur,omitempty"`
	Pid  int      `json:"pid"`
	Tid  int      `json:"tid"`
	// Args of a counter are all numbers; json.Marshal sorts the keys.
	Args map[string]any `json:"args,omitempty"`
}

type traceFile struct {
	TraceEvents     []traceEvent      `json:"traceEvents"`
	DisplayTimeUnit string            `json:"displayTimeUnit"`
	OtherData       map[string]string `json:"otherData"`
}

// Trace writes the observation's timeline as Chrome trace JSON: counters
// for each CPU, the workload's process tree and each disk, and slices for
// the observation window, the measured phase and (sqlite) its phases.
func Trace(run *model.Run) ([]byte, error) {
	o := run.Observation
	if o == nil {
		return nil, errors.New("the record has no timeline: record with `perfsleuth observe` (bench records have none)")
	}
	if len(o.Timeline) == 0 {
		return nil, fmt.Errorf("the record's timeline has no sample: the window (%gs) was shorter than one interval (%gs); observe again with a shorter --interval", o.DurationSec, o.IntervalSec)
	}
	t := &tracer{}
	t.metadata(run)
	t.slices(run)
	prev := 0.0
	for _, s := range o.Timeline {
		// A sample is the change over (prev, TSec]; a counter holds its
		// value from its timestamp on, so it goes at the interval's start.
		t.cpus(prev, s.CPUs)
		t.process(prev, s.TSec-prev, s.Process, o.DelayAcct == model.DelayAcctOn)
		t.disks(prev, s.Disks)
		prev = s.TSec
	}
	// Metadata first, then by time, as the format's readers expect; the
	// sort is stable so that a slice stays before those nested in it.
	sort.SliceStable(t.events, func(i, j int) bool {
		ei, ej := t.events[i], t.events[j]
		if (ei.Ph == "M") != (ej.Ph == "M") {
			return ei.Ph == "M"
		}
		return ei.Ts < ej.Ts
	})
	f := traceFile{
		TraceEvents:     t.events,
		DisplayTimeUnit: "ms",
		OtherData:       traceOtherData(run),
	}
	b, err := json.MarshalIndent(f, "", " ")
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	return append(b, '\n'), nil
}

type tracer struct{ events []traceEvent }

// us converts seconds to the format's microseconds, kept to the nanosecond.
func us(sec float64) float64 { return math.Round(sec*1e9) / 1e3 }

func (t *tracer) add(e traceEvent) { t.events = append(t.events, e) }

func (t *tracer) meta(name string, pid, tid int, args map[string]any) {
	t.add(traceEvent{Name: name, Ph: "M", Pid: pid, Tid: tid, Args: args})
}

func (t *tracer) slice(name string, tid int, startSec, durSec float64, args map[string]any) {
	d := us(durSec)
	t.add(traceEvent{Name: name, Cat: "perfsleuth", Ph: "X", Ts: us(startSec), Dur: &d, Pid: tracePIDWorkload, Tid: tid, Args: args})
}

// counter adds a counter event; values that are not finite numbers (which
// JSON cannot hold) are left out, and so is an event left with none.
func (t *tracer) counter(name string, pid int, atSec float64, values map[string]float64) {
	args := map[string]any{}
	for k, v := range values {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			args[k] = v
		}
	}
	if len(args) == 0 {
		return
	}
	t.add(traceEvent{Name: name, Cat: "perfsleuth", Ph: "C", Ts: us(atSec), Pid: pid, Tid: 0, Args: args})
}

func (t *tracer) metadata(run *model.Run) {
	procs := []struct {
		pid  int
		name string
	}{
		{tracePIDWorkload, "workload: " + describeTarget(run)},
		{tracePIDCPUs, "CPUs of " + run.Host.Hostname},
	}
	for _, s := range run.Observation.Timeline {
		if len(s.Disks) > 0 {
			procs = append(procs, struct {
				pid  int
				name string
			}{tracePIDDisks, "disks (iostat -x)"})
			break
		}
	}
	for i, p := range procs {
		t.meta("process_name", p.pid, 0, map[string]any{"name": p.name})
		t.meta("process_sort_index", p.pid, 0, map[string]any{"sort_index": i})
	}
	t.meta("thread_name", tracePIDWorkload, traceTIDWindow, map[string]any{"name": "observation"})
	if run.Result != nil {
		t.meta("thread_name", tracePIDWorkload, traceTIDRun, map[string]any{"name": "measured phase"})
		if run.Result.SQLite != nil {
			t.meta("thread_name", tracePIDWorkload, traceTIDPhases, map[string]any{"name": "sqlite phases (laid end to end)"})
		}
	}
}

// slices adds what the record holds a start and a length for: the window,
// and the measured phase that starts with it. SQLite phases ran one after
// the other, but the record holds only their lengths, which leave out the
// generation of parameters between transactions: they are laid end to end
// from the window's start, so each starts no later than it really did.
func (t *tracer) slices(run *model.Run) {
	o := run.Observation
	t.slice("observation window", traceTIDWindow, 0, o.DurationSec, map[string]any{
		"source": o.Source, "interval_sec": o.IntervalSec, "samples": len(o.Timeline), "delay_acct": o.DelayAcct,
	})
	r := run.Result
	if r == nil {
		return
	}
	args := map[string]any{"duration_sec": r.DurationSec, "interrupted": run.Interrupted}
	if c := r.Command; c != nil {
		args["exit_code"] = c.ExitCode
		if c.Signal != "" {
			args["signal"] = c.Signal
		}
	}
	if f := r.FileIO; f != nil {
		for _, op := range f.Ops {
			args[op.Op+"_ops_per_sec"] = op.OpsPerSec
		}
	}
	t.slice(describeTarget(run), traceTIDRun, 0, r.DurationSec, args)
	if r.SQLite == nil {
		return
	}
	at := 0.0
	for _, p := range r.SQLite.Phases {
		t.slice(p.Phase, traceTIDPhases, at, p.DurationSec, map[string]any{
			"duration_sec": p.DurationSec, "transactions": p.Transactions, "statements": p.Statements,
			"tx_per_sec": p.TxPerSec, "p50_ns": p.Latency.P50Ns, "p99_ns": p.Latency.P99Ns, "rows_after": p.RowsAfter,
		})
		at += p.DurationSec
	}
}

// cpus adds, per CPU, the busy share (user, nice, system, irq, softirq:
// the time it ran something), iowait and steal; and for the all-CPU
// average (cpu -1) every field of the record.
func (t *tracer) cpus(at float64, cs []model.CPUUse) {
	for _, c := range cs {
		if c.CPU < 0 {
			t.counter("cpu all %", tracePIDCPUs, at, map[string]float64{
				"user_pct": c.User, "nice_pct": c.Nice, "system_pct": c.System, "iowait_pct": c.IOWait,
				"irq_pct": c.IRQ, "softirq_pct": c.SoftIRQ, "steal_pct": c.Steal,
			})
			continue
		}
		t.counter("cpu "+strconv.Itoa(c.CPU)+" %", tracePIDCPUs, at, map[string]float64{
			"busy_pct": cpuBusy(c), "iowait_pct": c.IOWait, "steal_pct": c.Steal,
		})
	}
}

func cpuBusy(c model.CPUUse) float64 { return c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ }

// process adds the workload's rates over an interval of dt seconds: CPU in
// percent of one CPU, context switches and bytes per second, and the mean
// number of threads waiting for a CPU or (with delay accounting on, as
// the block-IO delay is 0 without it) for block IO.
func (t *tracer) process(at, dt float64, p model.ProcessUse, delayAcct bool) {
	t.counter("workload threads", tracePIDWorkload, at, map[string]float64{"threads": float64(p.Threads), "processes": float64(p.Processes)})
	if dt <= 0 {
		return
	}
	t.counter("workload cpu % of one CPU", tracePIDWorkload, at, map[string]float64{"user": p.UserSec / dt * 100, "system": p.SystemSec / dt * 100})
	t.counter("workload context switches/s", tracePIDWorkload, at, map[string]float64{"voluntary": float64(p.VolCtxSw) / dt, "nonvoluntary": float64(p.InvolCtxSw) / dt})
	t.counter("workload block IO bytes/s", tracePIDWorkload, at, map[string]float64{"read_bytes": float64(p.ReadBytes) / dt, "write_bytes": float64(p.WriteBytes) / dt, "cancelled_write_bytes": float64(p.CancelledWriteBytes) / dt})
	t.counter("workload read/write calls bytes/s", tracePIDWorkload, at, map[string]float64{"rchar": float64(p.RChar) / dt, "wchar": float64(p.WChar) / dt})
	waiting := map[string]float64{"run_queue": p.RunDelaySec / dt}
	if delayAcct {
		waiting["block_io"] = p.IODelaySec / dt
	}
	t.counter("workload threads waiting", tracePIDWorkload, at, waiting)
}

// disks adds each disk's iostat -x figures as the record holds them.
func (t *tracer) disks(at float64, ds []model.DiskUse) {
	for _, d := range ds {
		n := d.Device + " "
		t.counter(n+"IOPS", tracePIDDisks, at, map[string]float64{"r_per_sec": d.ReadsPerSec, "w_per_sec": d.WritesPerSec})
		t.counter(n+"MB/s", tracePIDDisks, at, map[string]float64{"rmb_per_sec": d.ReadMBps, "wmb_per_sec": d.WriteMBps})
		t.counter(n+"merges/s", tracePIDDisks, at, map[string]float64{"rrqm_per_sec": d.RMergedPerSec, "wrqm_per_sec": d.WMergedPerSec})
		t.counter(n+"await ms", tracePIDDisks, at, map[string]float64{"r_await_ms": d.RAwaitMs, "w_await_ms": d.WAwaitMs})
		t.counter(n+"queue", tracePIDDisks, at, map[string]float64{"avg_qu_sz": d.AvgQueue})
		t.counter(n+"request KiB", tracePIDDisks, at, map[string]float64{"avg_rq_kib": d.AvgRqKiB})
		t.counter(n+"util %", tracePIDDisks, at, map[string]float64{"util_pct": d.UtilPct})
	}
}

// describeTarget names what ran, in a few words.
func describeTarget(run *model.Run) string {
	t := run.Target
	switch {
	case t.FileIO != nil:
		return "fileio " + t.FileIO.RW
	case t.SQLite != nil:
		return "sqlite " + strings.Join(t.SQLite.Phases, "/")
	case t.Command != nil:
		return "command: " + strings.Join(t.Command.Argv, " ")
	case t.PID != nil:
		return fmt.Sprintf("pid %d (%s)", t.PID.PID, t.PID.Comm)
	}
	return t.Kind
}

// traceOtherData is the trace's metadata, which Perfetto shows under
// "Info and stats".
func traceOtherData(run *model.Run) map[string]string {
	return map[string]string{
		"tool":           strings.TrimSpace(run.Tool.Name + " " + run.Tool.Version),
		"args":           strings.Join(run.Tool.Args, " "),
		"target":         describeTarget(run),
		"host":           run.Host.Hostname,
		"kernel":         run.Host.Kernel,
		"started_at":     run.StartedAt.Format("2006-01-02T15:04:05.999999999Z07:00"),
		"schema_version": strconv.Itoa(run.SchemaVersion),
		"time_zero":      "ts 0 is the start of the observation window; a counter sits at the start of the interval it covers",
	}
}
