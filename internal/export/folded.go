package export

import (
	"bytes"
	"errors"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// The folded ("collapsed") stack format that Brendan Gregg's
// stackcollapse-*.pl scripts write and flamegraph.pl and speedscope read:
// one line per stack, frames outermost first joined by ';', a space, an
// integer count. Readers split a line at its last space and the stack at
// every ';', so a frame may hold neither ';' nor a line break; spaces are
// replaced too, as stackcollapse-perf.pl does for comms, so that no reader
// has to guess where the count starts.

// kernelSuffix marks a kernel frame, as stackcollapse-perf.pl --kernel
// does; flamegraph.pl's java and js palettes colour such frames as kernel.
const kernelSuffix = "_[k]"

// Placeholder frames. flamegraph.pl draws "[unknown]" for frames perf could
// not resolve; an unresolved user frame inside a known file keeps the file.
const (
	unknownFrame = "[unknown]"
	noStackFrame = "[no stack]"
)

// FoldedOnCPU writes the on-CPU samples as folded stacks,
// process;thread;user frames outer to inner;kernel frames outer to inner,
// counted in samples (at TimeAccounting.OnCPUHz).
func FoldedOnCPU(run *model.Run) ([]byte, error) {
	if err := onCPUPresent(run); err != nil {
		return nil, err
	}
	n := newNames(run)
	lines := map[string]int64{}
	for _, s := range run.TimeAccounting.OnCPU {
		head := []string{n.Process(s.PID), n.Thread(s.PID, s.TID)}
		lines[foldedStack(head, s.User, s.Kernel)] += s.Samples
	}
	return foldedLines(lines, "on-CPU samples")
}

// FoldedOffCPU writes the off-CPU time as folded stacks,
// process;category;thread;user frames;kernel frames, counted in
// microseconds (rounded) so that the counts are integers, as flamegraph.pl
// and speedscope need.
func FoldedOffCPU(run *model.Run) ([]byte, error) {
	if err := offCPUPresent(run); err != nil {
		return nil, err
	}
	n := newNames(run)
	lines := map[string]int64{}
	for _, s := range run.TimeAccounting.OffCPU {
		head := []string{n.Process(s.PID), s.Category, n.Thread(s.PID, s.TID)}
		lines[foldedStack(head, s.User, s.Kernel)] += int64(math.Round(s.Seconds * 1e6))
	}
	return foldedLines(lines, "off-CPU time of at least 1 µs")
}

func onCPUPresent(run *model.Run) error {
	ta := run.TimeAccounting
	if ta != nil && ta.Source == "ebpf" && len(ta.OnCPU) == 0 && ta.OnCPUNote == "" && len(ta.OffCPU) > 0 {
		return errors.New("the record has off-CPU stacks but no on-CPU samples: it was made by a perfsleuth that did not sample on-CPU stacks yet; record again with `perfsleuth observe --stacks`")
	}
	var n int
	var note string
	if ta != nil {
		n, note = len(ta.OnCPU), ta.OnCPUNote
	}
	return needStacks(run, "on-CPU", n, note)
}

func offCPUPresent(run *model.Run) error {
	var n int
	if ta := run.TimeAccounting; ta != nil {
		n = len(ta.OffCPU)
	}
	return needStacks(run, "off-CPU", n, "")
}

// foldedStack joins the head frames (process, thread, ...) and a stack's
// frames, which the record holds innermost first, outermost first: the
// user frames, then the kernel frames that ran on top of them.
func foldedStack(head, user, kernel []string) string {
	fs := make([]string, 0, len(head)+len(user)+len(kernel))
	for _, h := range head {
		fs = append(fs, foldedName(h))
	}
	for i := len(user) - 1; i >= 0; i-- {
		fs = append(fs, foldedFrame(parseFrame(user[i], false)))
	}
	for i := len(kernel) - 1; i >= 0; i-- {
		fs = append(fs, foldedFrame(parseFrame(kernel[i], true)))
	}
	if len(user)+len(kernel) == 0 {
		fs = append(fs, foldedName(noStackFrame))
	}
	return strings.Join(fs, ";")
}

// foldedFrame names a frame by its function alone: offsets would split one
// function into as many sibling boxes as it has call sites, and flame
// graphs are read by function (stackcollapse-perf.pl drops them too).
func foldedFrame(f frame) string {
	name := f.Function
	if !f.Resolved {
		name = unknownFrame
		if f.File != "" && !f.Kernel {
			name = "[" + f.File + "]"
		}
	}
	name = foldedName(name)
	if f.Kernel {
		name += kernelSuffix
	}
	return name
}

// foldedName makes a name safe for a folded line: ';' (the frame
// separator) becomes ':', white space (the count separator, and line
// breaks) '_', other control characters and invalid UTF-8 '?'.
func foldedName(s string) string {
	if s == "" {
		return unknownFrame
	}
	s = strings.ToValidUTF8(s, "?")
	return strings.Map(func(r rune) rune {
		switch {
		case r == ';':
			return ':'
		case unicode.IsSpace(r):
			return '_'
		case unicode.IsControl(r) || r == utf8.RuneError:
			return '?'
		}
		return r
	}, s)
}

// foldedLines writes the stacks sorted, one per line, leaving out those
// that count 0; what says what was missing when none is left.
func foldedLines(lines map[string]int64, what string) ([]byte, error) {
	keys := make([]string, 0, len(lines))
	for k, v := range lines {
		if v > 0 {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("the record's stacks hold no " + what)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(' ')
		b.WriteString(strconv.FormatInt(lines[k], 10))
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}
