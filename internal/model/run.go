// Package model is the perfsleuth run record: plain data that a run produces and
// that analysis and rendering consume. It is serialised as versioned JSON
// (docs/run-record.md) so that `perfsleuth report` can render a run again
// without touching the kernel. No logic lives here beyond (de)serialisation.
package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"time"
)

// SchemaVersion is bumped on every incompatible change to the JSON layout.
const SchemaVersion = 1

// Run is one perfsleuth run: what ran, where, what it measured, what was seen.
type Run struct {
	SchemaVersion int       `json:"schema_version"`
	Tool          Tool      `json:"tool"`
	StartedAt     time.Time `json:"started_at"`
	EndedAt       time.Time `json:"ended_at"`
	// Interrupted is true when the run was stopped early (Ctrl-C, target died);
	// the result then covers only what was measured until then.
	Interrupted bool         `json:"interrupted"`
	Host        Host         `json:"host"`
	Target      Target       `json:"target"`
	Result      *Result      `json:"result,omitempty"`
	Observation *Observation `json:"observation,omitempty"`
	// TimeAccounting, Verdict and Findings are the analysis of the run.
	TimeAccounting *TimeAccounting `json:"time_accounting,omitempty"`
	// Storage is the eBPF view of the storage stack: devices, page cache,
	// files, SQLite pages.
	Storage  *StorageIO `json:"storage,omitempty"`
	Verdict  *Verdict   `json:"verdict,omitempty"`
	Findings []Finding  `json:"findings,omitempty"`
	// Experiments are diagnose's reruns under changed conditions; the rest
	// of the record is then the baseline run with the median measure.
	Experiments *Experiments `json:"experiments,omitempty"`
	// Warnings are things the user can act on, in plain words.
	Warnings []string `json:"warnings,omitempty"`
}

// Tool identifies the perfsleuth build and the command line that made the run.
type Tool struct {
	Name    string   `json:"name"`
	Version string   `json:"version"`
	Args    []string `json:"args"`
}

// Target is what was run or observed, with every setting, defaults included.
type Target struct {
	// Kind is one of "fileio", "sqlite", "null", "command", "pid".
	Kind    string         `json:"kind"`
	FileIO  *FileIOConfig  `json:"fileio,omitempty"`
	SQLite  *SQLiteConfig  `json:"sqlite,omitempty"`
	Null    *NullConfig    `json:"null,omitempty"`
	Command *CommandConfig `json:"command,omitempty"`
	PID     *PIDConfig     `json:"pid,omitempty"`
	// With are running processes observed with the workload, as one: the
	// server a client command talks to (observe -p PID -- CMD), or the
	// other processes of observe -p A -p B.
	With []PIDConfig `json:"with,omitempty"`
	// Notices say in plain words what the run does that a user might not
	// expect (an fsync at the end, O_DIRECT, page-cache reads, ...).
	Notices []string `json:"notices,omitempty"`
}

// CommandConfig describes `observe -- CMD ARGS...`.
type CommandConfig struct {
	Argv []string `json:"argv"`
	Dir  string   `json:"dir"`
}

// PIDConfig describes `observe -p PID`.
type PIDConfig struct {
	PID         int     `json:"pid"`
	Comm        string  `json:"comm"`
	Cmdline     string  `json:"cmdline"`
	DurationSec float64 `json:"duration_sec"`
}

// Result is what the workload itself measured.
type Result struct {
	// DurationSec is the measured phase's wall time (prepare excluded).
	DurationSec float64 `json:"duration_sec"`
	// WorkerTIDs are the threads that did a built-in benchmark's work; the
	// process's other threads are Go runtime threads (see ThreadTime.Role).
	WorkerTIDs []int          `json:"worker_tids,omitempty"`
	FileIO     *FileIOResult  `json:"fileio,omitempty"`
	SQLite     *SQLiteResult  `json:"sqlite,omitempty"`
	Null       *NullResult    `json:"null,omitempty"`
	Command    *CommandResult `json:"command,omitempty"`
}

// CommandResult is how an observed command (or PID) ended.
type CommandResult struct {
	// ExitCode is -1 when the process was killed by a signal or is not our child.
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal,omitempty"`
	// Exited is false when observation of a PID ended before the process did.
	Exited  bool    `json:"exited"`
	WallSec float64 `json:"wall_sec"`
	// Reported is the result the command printed itself (fio's IOPS,
	// sysbench's and pgbench's tps, redis-benchmark's requests/s, or the
	// number --metric names), read from its output; nil when it printed
	// none perfsleuth reads. Its primary figure, not the wall time, is the
	// run's result.
	Reported *ReportedResult `json:"reported,omitempty"`
}

// ReportedResult is what a program reported as its result, parsed from its
// output.
type ReportedResult struct {
	// Tool is the program the output came from: fio, sysbench, pgbench,
	// redis-benchmark, or metric (a --metric regex).
	Tool string `json:"tool"`
	// Format is the output's format when the tool has several: fio's
	// json or normal, redis-benchmark's summary, quiet or csv.
	Format string `json:"format,omitempty"`
	// Metrics are the figures read, in the order the tool printed them.
	Metrics []ReportedMetric `json:"metrics"`
	// Primary indexes Metrics: the figure that is the run's result, which
	// the result view, compare's headline and diagnose's measure use.
	Primary int `json:"primary"`
}

// PrimaryMetric is the run's result figure.
func (r *ReportedResult) PrimaryMetric() (ReportedMetric, bool) {
	if r == nil || r.Primary < 0 || r.Primary >= len(r.Metrics) {
		return ReportedMetric{}, false
	}
	return r.Metrics[r.Primary], true
}

// Measure is the figure as the measure compare and diagnose compare runs
// by (Source "reported").
func (m ReportedMetric) Measure() Measure {
	return Measure{Name: m.Name, Unit: m.Unit, Source: "reported", HigherIsBetter: m.HigherIsBetter}
}

// ReportedMetric is one figure a program reported.
type ReportedMetric struct {
	// Name says what it is, as the tool names it: "read IOPS", "tps",
	// "SET requests/s", "latency average".
	Name string `json:"name"`
	// Job is the fio job, redis-benchmark test or pgbench statement it
	// belongs to ("" for the whole run).
	Job   string  `json:"job,omitempty"`
	Value float64 `json:"value"`
	// Unit is ops/s, B/s, s (latencies are in seconds), tx/s, or the
	// tool's own word for a --metric.
	Unit           string `json:"unit"`
	HigherIsBetter bool   `json:"higher_is_better"`
}

// Latency summarises a latency distribution recorded in an HDR histogram
// (3 significant digits). All values are nanoseconds.
type Latency struct {
	Count  int64   `json:"count"`
	MinNs  int64   `json:"min_ns"`
	MeanNs float64 `json:"mean_ns"`
	StdNs  float64 `json:"stddev_ns"`
	P50Ns  int64   `json:"p50_ns"`
	P90Ns  int64   `json:"p90_ns"`
	P99Ns  int64   `json:"p99_ns"`
	P999Ns int64   `json:"p99_9_ns"`
	MaxNs  int64   `json:"max_ns"`
	// Buckets are the histogram's non-empty buckets, ascending, so the
	// distribution can be drawn again from the record.
	Buckets []Bucket `json:"buckets,omitempty"`
}

// Bucket is one histogram bucket: Count values in [LowNs, HighNs].
type Bucket struct {
	LowNs  int64 `json:"low_ns"`
	HighNs int64 `json:"high_ns"`
	Count  int64 `json:"count"`
}

// Load reads a run record from path and checks its schema version.
func Load(path string) (*Run, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Run
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s is not a perfsleuth run record (%s)", path, decodeWords(b, err))
	}
	if r.SchemaVersion == 0 {
		return nil, fmt.Errorf("%s is not a perfsleuth run record (no schema_version)", path)
	}
	if r.SchemaVersion > SchemaVersion {
		return nil, fmt.Errorf("%s has schema_version %d, this perfsleuth reads up to %d: upgrade perfsleuth", path, r.SchemaVersion, SchemaVersion)
	}
	return &r, nil
}

// decodeWords says why b did not decode as a record, in words rather than
// the decoder's ("invalid character 'o' in literal null", "unexpected end
// of JSON input"): where the file stops being JSON, and what that likely
// means.
func decodeWords(b []byte, err error) string {
	trimmed := bytes.TrimSpace(b)
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case len(trimmed) == 0:
		return "the file is empty"
	case trimmed[0] != '{' && !json.Valid(trimmed):
		return "not JSON"
	case trimmed[0] != '{':
		return "JSON, but not an object as a record is"
	case errors.As(err, &syn) && syn.Error() == "unexpected end of JSON input":
		return fmt.Sprintf("it ends early, after %d bytes: truncated?", len(b))
	case errors.As(err, &syn):
		line := 1 + bytes.Count(b[:min(int(syn.Offset), len(b))], []byte("\n"))
		return fmt.Sprintf("not valid JSON at byte %d, line %d: damaged or edited?", syn.Offset, line)
	case errors.As(err, &typ):
		return fmt.Sprintf("its field %s holds a JSON %s where a record holds %s", typ.Field, typ.Value, jsonKind(typ.Type))
	}
	return err.Error()
}

// jsonKind names what JSON value a Go type decodes from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}

// Save writes the run record to path atomically (WriteAtomic).
func Save(r *Run, path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return WriteAtomic(path, append(b, '\n'))
}

// WriteAtomic writes b to path through a temporary file beside it and a
// rename, so that an interrupted write never leaves a truncated record,
// page or export behind. The file is 0644: records and what is made from
// them are meant to be shared.
func WriteAtomic(path string, b []byte) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(b)
	if err := f.Chmod(0o644); werr == nil {
		werr = err
	}
	if err := f.Close(); werr == nil {
		werr = err
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		os.Remove(tmp)
		return werr
	}
	return nil
}
