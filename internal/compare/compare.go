// Package compare sets two run records side by side: whether they can be
// compared at all (settings and conditions that differ, the ones that decide
// the result named first), the headline measure of each with its change and
// whether that change is beyond the noise of the repeats, the measured
// quantities that differ beyond named thresholds, and the most likely cause
// of the difference, ranked by how much of it each candidate's evidence can
// account for.
//
// Like analyze, it reads only model.Runs, never the kernel, and returns plain
// data (a Comparison, versioned JSON); report renders it.
package compare

import (
	"fmt"
	"strings"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// SchemaVersion is bumped on every incompatible change to the Comparison's
// JSON layout (docs/compare.md).
const SchemaVersion = 1

// Comparison is the result of comparing run B against run A. Every change
// is B's against A's.
type Comparison struct {
	SchemaVersion int    `json:"schema_version"`
	A             RunRef `json:"a"`
	B             RunRef `json:"b"`
	// Summary is the comparison in one line.
	Summary string `json:"summary"`
	// Comparable is false when an issue makes the runs not comparable like
	// for like (any issue of severity NotComparable).
	Comparable bool `json:"comparable"`
	// Issues are the settings and conditions that differ, the ones that
	// make the runs not comparable first.
	Issues      []Issue      `json:"comparability"`
	Headline    Headline     `json:"headline"`
	Differences []Difference `json:"differences"`
	Explanation Explanation  `json:"explanation"`
}

// RunRef says which run a side is.
type RunRef struct {
	// Path is the record's file, when it came from one (set by the caller).
	Path string `json:"path,omitempty"`
	// Verb is "observe", "bench" or "diagnose": what made the record.
	Verb        string    `json:"verb"`
	Kind        string    `json:"kind"`
	Description string    `json:"description"`
	Hostname    string    `json:"hostname"`
	StartedAt   time.Time `json:"started_at"`
	// Args is the perfsleuth command line that made the record.
	Args []string `json:"args,omitempty"`
}

// Issue severities.
const (
	// NotComparable: the runs did different work or ran under different
	// conditions that decide the result; a difference in the headline may
	// come from this alone.
	NotComparable = "not_comparable"
	// KeepInMind: a difference worth knowing (another kernel, file system,
	// observer) that does not by itself make the comparison meaningless.
	KeepInMind = "keep_in_mind"
)

// Issue is one setting or condition that differs between the runs.
type Issue struct {
	// ID is a stable dotted id (docs/compare.md), e.g. "settings.sync".
	ID       string `json:"id"`
	Severity string `json:"severity"`
	// Aspect names what differs, in words ("sync behaviour").
	Aspect string `json:"aspect"`
	A      string `json:"a"`
	B      string `json:"b"`
	// Why says what the difference does to the comparison.
	Why string `json:"why"`
}

// Compare compares run b against run a. Neither run is modified.
func Compare(a, b *model.Run) *Comparison {
	c := &Comparison{SchemaVersion: SchemaVersion, A: ref(a), B: ref(b)}
	c.Issues = issues(a, b)
	c.Comparable = true
	for _, is := range c.Issues {
		if is.Severity == NotComparable {
			c.Comparable = false
		}
	}
	c.Headline = headline(a, b)
	c.Differences = differences(a, b)
	c.Explanation = explain(a, b, c)
	c.Summary = summary(c)
	return c
}

func ref(r *model.Run) RunRef {
	return RunRef{
		Verb:        verb(r),
		Kind:        r.Target.Kind,
		Description: describe(r.Target),
		Hostname:    r.Host.Hostname,
		StartedAt:   r.StartedAt,
		Args:        r.Tool.Args,
	}
}

// verb is the command that made a record: "diagnose" for one with
// experiments, "observe" for an observed single run (diagnose --quick too).
func verb(r *model.Run) string {
	switch {
	case r.Experiments != nil && r.Experiments.Pair != nil:
		return "compare --run"
	case r.Experiments != nil:
		return "diagnose"
	case r.Observation != nil || r.TimeAccounting != nil:
		return "observe"
	}
	return "bench"
}

// describe says what ran, in the words of the terminal report's title.
func describe(t model.Target) string {
	switch {
	case t.FileIO != nil:
		c := t.FileIO
		return fmt.Sprintf("fileio %s, %s blocks, %d file(s), %d thread(s)", c.RW, size(c.BS), c.Files, c.Threads)
	case t.SQLite != nil:
		c := t.SQLite
		return fmt.Sprintf("sqlite %s, journal=%s sync=%s, %d rows, %d per tx", strings.Join(c.Phases, "/"), c.Journal, c.Sync, c.Rows, c.TxSize)
	case t.Command != nil:
		return "command: " + strings.Join(t.Command.Argv, " ")
	case t.PID != nil:
		return fmt.Sprintf("pid %d (%s)", t.PID.PID, t.PID.Comm)
	}
	return t.Kind
}

// summary is the comparison in one line: comparability, the headline, the
// cause.
func summary(c *Comparison) string {
	var parts []string
	if !c.Comparable {
		var names []string
		for _, is := range c.Issues {
			if is.Severity == NotComparable {
				names = append(names, is.Aspect)
			}
		}
		parts = append(parts, "not comparable like for like ("+strings.Join(names, ", ")+")")
	}
	h := c.Headline
	switch h.Significance {
	case NotComparableMeasure:
		parts = append(parts, "the measures differ, so there is no headline change")
	case Significant:
		parts = append(parts, fmt.Sprintf("B %s, beyond the noise", h.Words))
	case NotSignificant:
		parts = append(parts, fmt.Sprintf("no significant difference (B %s, within the noise)", h.Words))
	default:
		parts = append(parts, fmt.Sprintf("B %s; the noise is unknown", h.Words))
	}
	if len(c.Explanation.Causes) > 0 {
		parts = append(parts, "most likely cause: "+c.Explanation.Causes[0].Name)
	}
	return strings.Join(parts, "; ")
}
