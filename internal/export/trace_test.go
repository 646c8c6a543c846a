package export

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// checkTrace checks a trace against the Trace Event Format: a JSON object
// with traceEvents; every event has name, ph, ts, pid and tid of the right
// JSON types; a counter's args are all numbers; a complete event has a
// duration; metadata is one of the kinds viewers know. It returns the
// events for further checks.
func checkTrace(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if u, _ := doc["displayTimeUnit"].(string); u != "ms" && u != "ns" {
		t.Errorf("displayTimeUnit %v, the format allows ms or ns", doc["displayTimeUnit"])
	}
	raw, ok := doc["traceEvents"].([]any)
	if !ok || len(raw) == 0 {
		t.Fatalf("no traceEvents array")
	}
	var evs []map[string]any
	lastTs, seenTimed := math.Inf(-1), false
	for i, r := range raw {
		e, ok := r.(map[string]any)
		if !ok {
			t.Fatalf("event %d is not an object: %v", i, r)
		}
		name, _ := e["name"].(string)
		ph, _ := e["ph"].(string)
		if name == "" || ph == "" {
			t.Errorf("event %d: name %v, ph %v: both must be non-empty strings", i, e["name"], e["ph"])
		}
		nums := map[string]float64{}
		for _, k := range []string{"ts", "pid", "tid"} {
			n, ok := e[k].(json.Number)
			if !ok {
				t.Errorf("event %d (%s): %s is %T, want a number", i, name, k, e[k])
				continue
			}
			nums[k], _ = n.Float64()
		}
		if nums["ts"] < 0 {
			t.Errorf("event %d (%s): negative ts", i, name)
		}
		switch ph {
		case "M":
			if seenTimed {
				t.Errorf("event %d: metadata after timed events", i)
			}
			if name != "process_name" && name != "thread_name" && name != "process_sort_index" {
				t.Errorf("event %d: unknown metadata %q", i, name)
			}
		case "C":
			args, ok := e["args"].(map[string]any)
			if !ok || len(args) == 0 {
				t.Errorf("counter %d (%s) has no args", i, name)
			}
			for k, v := range args {
				if _, ok := v.(json.Number); !ok {
					t.Errorf("counter %s: arg %s is %T, want a number", name, k, v)
				}
			}
		case "X":
			d, ok := e["dur"].(json.Number)
			if f, _ := d.Float64(); !ok || f < 0 {
				t.Errorf("complete event %d (%s): dur %v", i, name, e["dur"])
			}
		default:
			t.Errorf("event %d: phase %q not written by perfsleuth", i, ph)
		}
		if ph != "M" {
			seenTimed = true
			if nums["ts"] < lastTs {
				t.Errorf("event %d (%s) at %v before the one before it (%v)", i, name, nums["ts"], lastTs)
			}
			lastTs = nums["ts"]
		}
		evs = append(evs, e)
	}
	return evs
}

func num(t *testing.T, v any) float64 {
	t.Helper()
	n, ok := v.(json.Number)
	if !ok {
		t.Fatalf("%v is %T, not a number", v, v)
	}
	f, err := n.Float64()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// find returns the event with this phase and name at ts (µs).
func find(t *testing.T, evs []map[string]any, ph, name string, ts float64) map[string]any {
	t.Helper()
	for _, e := range evs {
		if e["ph"] == ph && e["name"] == name && math.Abs(num(t, e["ts"])-ts) < 1e-6 {
			return e
		}
	}
	t.Fatalf("no %s event %q at %gµs", ph, name, ts)
	return nil
}

func closeTo(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestTraceIsValidForEveryObservedRecord(t *testing.T) {
	for _, name := range []string{"observe-fileio", "observe-sqlite", "observe-detail", "observe-command", "diagnose-lock", "diagnose-sqlite", "observe-stacks"} {
		t.Run(name, func(t *testing.T) {
			b, err := Trace(loadTestdata(t, name))
			if err != nil {
				t.Fatal(err)
			}
			checkTrace(t, b)
		})
	}
}

// The counters carry the record's figures, each at the start of the
// interval it covers.
func TestTraceCountersAreTheRecords(t *testing.T) {
	run := loadTestdata(t, "observe-fileio")
	b, err := Trace(run)
	if err != nil {
		t.Fatal(err)
	}
	evs := checkTrace(t, b)
	o := run.Observation
	if len(o.Timeline) < 2 {
		t.Fatalf("fixture has %d samples, the test wants several", len(o.Timeline))
	}
	prev := 0.0
	for _, s := range o.Timeline {
		at := us(prev)
		for _, c := range s.CPUs {
			if c.CPU < 0 {
				args := find(t, evs, "C", "cpu all %", at)["args"].(map[string]any)
				for k, v := range map[string]float64{"user_pct": c.User, "system_pct": c.System, "iowait_pct": c.IOWait, "softirq_pct": c.SoftIRQ, "steal_pct": c.Steal} {
					if got := num(t, args[k]); got != v {
						t.Errorf("t=%g cpu all %s = %v, record %v", s.TSec, k, got, v)
					}
				}
				continue
			}
			args := find(t, evs, "C", "cpu "+itoa(c.CPU)+" %", at)["args"].(map[string]any)
			if got, want := num(t, args["busy_pct"]), c.User+c.Nice+c.System+c.IRQ+c.SoftIRQ; !closeTo(got, want) {
				t.Errorf("t=%g cpu %d busy %v, record's user+nice+system+irq+softirq %v", s.TSec, c.CPU, got, want)
			}
			if got := num(t, args["iowait_pct"]); got != c.IOWait {
				t.Errorf("t=%g cpu %d iowait %v, record %v", s.TSec, c.CPU, got, c.IOWait)
			}
		}
		for _, d := range s.Disks {
			iops := find(t, evs, "C", d.Device+" IOPS", at)["args"].(map[string]any)
			util := find(t, evs, "C", d.Device+" util %", at)["args"].(map[string]any)
			aw := find(t, evs, "C", d.Device+" await ms", at)["args"].(map[string]any)
			if num(t, iops["r_per_sec"]) != d.ReadsPerSec || num(t, iops["w_per_sec"]) != d.WritesPerSec ||
				num(t, util["util_pct"]) != d.UtilPct || num(t, aw["w_await_ms"]) != d.WAwaitMs {
				t.Errorf("t=%g disk %s: %v %v %v differ from the record %+v", s.TSec, d.Device, iops, util, aw, d)
			}
		}
		dt := s.TSec - prev
		p := s.Process
		cpu := find(t, evs, "C", "workload cpu % of one CPU", at)["args"].(map[string]any)
		cs := find(t, evs, "C", "workload context switches/s", at)["args"].(map[string]any)
		io := find(t, evs, "C", "workload block IO bytes/s", at)["args"].(map[string]any)
		if !closeTo(num(t, cpu["user"]), p.UserSec/dt*100) || !closeTo(num(t, cpu["system"]), p.SystemSec/dt*100) ||
			!closeTo(num(t, cs["voluntary"]), float64(p.VolCtxSw)/dt) || !closeTo(num(t, io["write_bytes"]), float64(p.WriteBytes)/dt) {
			t.Errorf("t=%g workload rates %v %v %v, record %+v over %gs", s.TSec, cpu, cs, io, p, dt)
		}
		prev = s.TSec
	}
	w := find(t, evs, "X", "observation window", 0)
	if got := num(t, w["dur"]); got != us(o.DurationSec) {
		t.Errorf("window lasts %vµs, record %gs", got, o.DurationSec)
	}
	m := find(t, evs, "X", "fileio "+run.Target.FileIO.RW, 0)
	if got := num(t, m["dur"]); got != us(run.Result.DurationSec) {
		t.Errorf("measured phase lasts %vµs, record %gs", got, run.Result.DurationSec)
	}
}

// SQLite phases are laid end to end from the window's start with the
// record's lengths, and named on a track that says so.
func TestTraceSQLitePhases(t *testing.T) {
	run := loadTestdata(t, "observe-sqlite")
	b, err := Trace(run)
	if err != nil {
		t.Fatal(err)
	}
	evs := checkTrace(t, b)
	at := 0.0
	for _, p := range run.Result.SQLite.Phases {
		e := find(t, evs, "X", p.Phase, us(at))
		if num(t, e["dur"]) != us(p.DurationSec) || num(t, e["tid"]) != traceTIDPhases {
			t.Errorf("phase %s: %v, want %gs on the phases track", p.Phase, e, p.DurationSec)
		}
		if got := num(t, e["args"].(map[string]any)["transactions"]); got != float64(p.Transactions) {
			t.Errorf("phase %s: %v transactions, record %d", p.Phase, got, p.Transactions)
		}
		at += p.DurationSec
	}
	named := false
	for _, e := range evs {
		if e["name"] == "thread_name" && num(t, e["tid"]) == traceTIDPhases {
			named = strings.Contains(e["args"].(map[string]any)["name"].(string), "laid end to end")
		}
	}
	if !named {
		t.Error("the phases' track does not say they are laid end to end")
	}
}

// Text from the workload (a command's arguments) survives JSON escaping.
func TestTraceKeepsWorkloadText(t *testing.T) {
	run := loadTestdata(t, "observe-command")
	run.Target.Command.Argv = []string{"app", hostileArg}
	run.Host.Hostname = hostilePath
	b, err := Trace(run)
	if err != nil {
		t.Fatal(err)
	}
	evs := checkTrace(t, b)
	names := map[string]bool{}
	for _, e := range evs {
		if e["name"] == "process_name" {
			names[e["args"].(map[string]any)["name"].(string)] = true
		}
	}
	if !names["workload: command: app "+hostileArg] {
		t.Errorf("process names %v lack the command line %q", names, hostileArg)
	}
	// encoding/json writes invalid UTF-8 as U+FFFD and escapes < and >.
	if !names["CPUs of "+strings.ToValidUTF8(hostilePath, "\uFFFD")] {
		t.Errorf("process names %v lack the host name", names)
	}
	if bytes.Contains(b, []byte("</script>")) {
		t.Error("</script> not escaped")
	}
}

func TestTraceNeedsATimeline(t *testing.T) {
	if b, err := Trace(loadTestdata(t, "bench-sqlite")); err == nil || !strings.Contains(err.Error(), "record with `perfsleuth observe`") {
		t.Errorf("bench record: %v (%d bytes), want an error naming observe", err, len(b))
	}
	run := loadTestdata(t, "observe-command")
	run.Observation.Timeline = nil
	if _, err := Trace(run); err == nil || !strings.Contains(err.Error(), "shorter --interval") {
		t.Errorf("empty timeline: %v, want an error suggesting a shorter interval", err)
	}
}

// Values JSON cannot hold are left out rather than failing the export or
// writing something viewers reject; a sample of zero length gives no rates.
func TestTraceOddValues(t *testing.T) {
	run := loadTestdata(t, "observe-command")
	s := &run.Observation.Timeline[0]
	s.CPUs = append(s.CPUs, model.CPUUse{CPU: 7, User: math.NaN(), IOWait: math.Inf(1)})
	run.Observation.Timeline = append(run.Observation.Timeline, model.Sample{TSec: s.TSec})
	b, err := Trace(run)
	if err != nil {
		t.Fatal(err)
	}
	evs := checkTrace(t, b)
	for _, e := range evs {
		if e["name"] == "cpu 7 %" {
			args := e["args"].(map[string]any)
			if _, ok := args["busy_pct"]; ok {
				t.Errorf("NaN busy written: %v", args)
			}
			if _, ok := args["iowait_pct"]; ok {
				t.Errorf("infinite iowait written: %v", args)
			}
		}
	}
}
