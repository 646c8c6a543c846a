// Package instances keeps the list of the perfsleuth observations running
// on the machine, and of those that ended while one of them ran, in a file
// they share (internal/runfile), so that a record can say which other
// perfsleuth ran beside it, even one that began and ended in the middle of
// it: their probes, and a diagnose's load generators, load the same
// machine.
package instances

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/runfile"
)

// Path is the shared list.
const Path = runfile.Dir + "/instances"

// entry is one observation: its process (pid and start time), its command
// line, and when it began and ended (Unix ns; Ended 0 while it runs).
type entry struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
	Args  string `json:"args"`
	Began int64  `json:"began"`
	Ended int64  `json:"ended,omitempty"`
}

// String is the observation as Others names it: "pid (command line)".
func (e entry) String() string { return fmt.Sprintf("%d (%s)", e.PID, e.Args) }

// Instance is this process's observation in the list.
type Instance struct {
	path string
	me   entry
}

// Register adds an observation of this process (its arguments args) to the
// list. It returns nil when the list cannot be written (not root, a
// read-only /run): Others and End on nil do nothing.
func Register(args []string) *Instance { return register(Path, args, time.Now()) }

func register(path string, args []string, now time.Time) *Instance {
	pid := os.Getpid()
	in := &Instance{path: path, me: entry{PID: pid, Start: runfile.StartTime(pid), Args: Words(args), Began: now.UnixNano()}}
	if err := in.update(now, func(es []entry) []entry { return append(es, in.me) }); err != nil {
		return nil
	}
	return in
}

// Words is a command line as the list keeps it: "perfsleuth" and its
// first four arguments.
func Words(args []string) string {
	if len(args) > 4 {
		args = append(slices.Clone(args[:4]), "...")
	}
	return strings.Join(append([]string{"perfsleuth"}, args...), " ")
}

// Others lists the other observations that ran while this one did (from
// its Register to now), as "pid (command line)", but not those of the
// processes skip names (this one's workload: a perfsleuth it observes).
func (in *Instance) Others(skip func(pid int) bool) []string {
	if in == nil {
		return nil
	}
	var out []string
	now := time.Now()
	in.update(now, func(es []entry) []entry {
		for _, e := range es {
			if e.PID == in.me.PID || (skip != nil && skip(e.PID)) {
				continue
			}
			if e.Ended != 0 && e.Ended < in.me.Began {
				continue
			}
			if s := e.String(); !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
		return es
	})
	slices.Sort(out)
	return out
}

// End marks this observation ended; the list keeps it while an
// observation that ran beside it still runs.
func (in *Instance) End() {
	if in == nil {
		return
	}
	now := time.Now()
	in.update(now, func(es []entry) []entry {
		for i := range es {
			if es[i] == in.me {
				es[i].Ended = now.UnixNano()
				in.me = es[i]
				break
			}
		}
		return es
	})
}

// update runs fn on the list under its lock, after marking ended the
// observations whose process no longer runs (killed), and writes back
// what fn left, less the ended observations that no running one overlaps.
func (in *Instance) update(now time.Time, fn func([]entry) []entry) error {
	return runfile.With(in.path, func(b []byte) []byte {
		var es []entry
		json.Unmarshal(b, &es) // a damaged list starts again
		for i := range es {
			if es[i].Ended == 0 && !runfile.Running(es[i].PID, es[i].Start) {
				es[i].Ended = now.UnixNano()
			}
		}
		es = fn(es)
		oldest := int64(-1) // the earliest beginning of a running observation
		for _, e := range es {
			if e.Ended == 0 && (oldest < 0 || e.Began < oldest) {
				oldest = e.Began
			}
		}
		es = slices.DeleteFunc(es, func(e entry) bool { return e.Ended != 0 && (oldest < 0 || e.Ended < oldest) })
		if len(es) == 0 {
			return nil
		}
		out, _ := json.Marshal(es)
		return out
	})
}
