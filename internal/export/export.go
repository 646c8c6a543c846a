// Package export writes a saved run record in the formats other tools read:
// folded stacks for flame graphs (flamegraph.pl, speedscope), a pprof
// profile (go tool pprof), a Chrome trace (Perfetto, chrome://tracing) and
// the Prometheus text exposition format (promtool, node_exporter's textfile
// collector, a Pushgateway). Like internal/report it reads only a model.Run,
// so a record from one machine exports on another without root; and, like a
// renderer, each format returns bytes and never prints.
//
// A format that the record holds no data for (no stacks, no timeline) is an
// error naming what to record, never an empty file that looks valid.
// docs/exports.md describes every format's conventions.
package export

import (
	"fmt"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// Format is one export: the flag that asks for it and how to render it.
type Format struct {
	// Flag is the long flag of `perfsleuth export` that names the output file.
	Flag string
	// Usage is the flag's help text.
	Usage  string
	Render func(*model.Run) ([]byte, error)
	// Opens names what reads the output, for the message after writing it.
	Opens string
}

// Formats lists every export, in the order `perfsleuth export --help` shows them.
var Formats = []Format{
	{
		Flag:   "folded",
		Usage:  "write the on-CPU stacks as folded stacks (flamegraph.pl, speedscope) to FILE; needs a record made with --stacks",
		Render: FoldedOnCPU,
		Opens:  "flamegraph.pl FILE > oncpu.svg, or speedscope",
	},
	{
		Flag:   "folded-offcpu",
		Usage:  "write the off-CPU stacks as folded stacks, microseconds per stack, category after the process, to FILE; needs a record made with --stacks",
		Render: FoldedOffCPU,
		Opens:  "flamegraph.pl --countname=us FILE > offcpu.svg, or speedscope",
	},
	{
		Flag:   "pprof",
		Usage:  "write the on- and off-CPU stacks as a gzipped pprof profile to FILE; needs a record made with --stacks",
		Render: Pprof,
		Opens:  "go tool pprof -top FILE (-sample_index=offcpu for the off-CPU time)",
	},
	{
		Flag:   "trace",
		Usage:  "write the timeline as Chrome trace JSON (Perfetto, chrome://tracing) to FILE; needs a record made with observe",
		Render: Trace,
		Opens:  "https://ui.perfetto.dev (Open trace file) or chrome://tracing",
	},
	{
		Flag:   "prometheus",
		Usage:  "write the summary in the Prometheus text exposition format to FILE",
		Render: Prometheus,
		Opens:  "promtool check metrics < FILE; node_exporter's textfile collector; a Pushgateway",
	},
}

// WriteFile writes b to path atomically (a temporary file in the same
// directory, then a rename), as model.Save does, so that an interrupted
// export never leaves a truncated file that a viewer would half-read.
func WriteFile(path string, b []byte) error { return model.WriteAtomic(path, b) }

// needStacks says why a record has no stacks of the kind asked for (what),
// or returns nil when it has some.
func needStacks(run *model.Run, what string, n int, note string) error {
	ta := run.TimeAccounting
	switch {
	case ta == nil:
		return fmt.Errorf("the record has no time accounting, so no %s stacks: record with `perfsleuth observe --stacks`", what)
	case ta.Source != "ebpf":
		return fmt.Errorf("the record's time accounting came from %s, which takes no stacks: record with `perfsleuth observe --stacks` (eBPF, as root)", ta.Source)
	case n == 0 && note != "":
		return fmt.Errorf("the record has no %s stacks (%s)", what, note)
	case n == 0:
		return fmt.Errorf("the record has no %s stacks: record with `perfsleuth observe --stacks`", what)
	}
	return nil
}
