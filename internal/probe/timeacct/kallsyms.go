package timeacct

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/perfsleuth/perfsleuth/internal/symbolize"
)

// Stack classes, in priority order (lower wins); TA_CLASS_* in bpf/timeacct.h.
const (
	classNone  = 0
	classLock  = 1
	classSync  = 2
	classWrite = 3
	classRead  = 4
)

// maxRanges is TA_MAX_RANGES in bpf/timeacct.h.
const maxRanges = 32

// lockPrefixes name the kernel's sleeping-lock slow paths: a task in D state
// with one of them on its stack waits for a lock.
var lockPrefixes = []string{"rwsem_down_", "__mutex_lock", "__rt_mutex", "percpu_down_write"}

// exactClasses name functions whose presence tells what storage wait it is.
// Compiler clones (name.cold, name.isra.0, ...) match too.
var exactClasses = map[string]int{
	"jbd2_log_wait_commit":      classSync,
	"file_write_and_wait_range": classSync,
	"blkdev_issue_flush":        classSync,
	"jbd2_complete_transaction": classSync,
	"__filemap_fdatawait_range": classSync,
	"balance_dirty_pages":       classWrite,
	"blkdev_issue_discard":      classWrite, // a discard waited for (ext4 -o discard freeing blocks)
	"folio_wait_writeback":      classWrite,
	"filemap_fault":             classRead,
	"filemap_read":              classRead,
	"do_read_cache_folio":       classRead,
}

// symRange is a kernel text range [start, end) and its stack class.
type symRange struct {
	name       string
	start, end uint64
	class      int
}

func symbolClass(name []byte) int {
	base, _, _ := bytes.Cut(name, []byte("."))
	if c, ok := exactClasses[string(base)]; ok {
		return c
	}
	for _, p := range lockPrefixes {
		if bytes.HasPrefix(name, []byte(p)) {
			return classLock
		}
	}
	return classNone
}

// wanted keeps the kernel's own text symbols that have a class or are the
// tick's function: a few dozen of kallsyms' 120,000 lines.
func wanted(name []byte, typ byte, module []byte) bool {
	if len(module) > 0 || (typ != 't' && typ != 'T') {
		return false
	}
	return symbolClass(name) != classNone || slices.Contains(tickFunctions, string(name))
}

// tickFunctions are the scheduler tick's hrtimer function, by the names
// kernels have given it (tick_nohz_handler since 6.10): the activity
// samples are taken when it expires.
var tickFunctions = []string{"tick_nohz_handler", "tick_sched_timer"}

// parseKallsyms reads /proc/kallsyms and returns the ranges of the
// classified functions of the kernel itself (not modules), each ending at
// the next symbol's address, and the address of the scheduler tick's
// hrtimer function (0 if not found). Ranges beyond maxRanges are left out,
// lowest priority first. Hidden addresses (kptr_restrict) or an empty file
// give neither.
func parseKallsyms(r io.Reader) (_ []symRange, tick uint64, _ error) {
	funcs, err := symbolize.ReadKallsymsOf(r, wanted)
	if errors.Is(err, symbolize.ErrKernelHidden) || errors.Is(err, symbolize.ErrNoKernelSymbols) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("kallsyms: %w", err)
	}
	var out []symRange
	// wanted kept only the kernel's own text symbols.
	for _, f := range funcs {
		if tick == 0 && slices.Contains(tickFunctions, f.Name) {
			tick = f.Start
		}
		if c := symbolClass([]byte(f.Name)); c != classNone {
			out = append(out, symRange{name: f.Name, start: f.Start, end: f.End, class: c})
		}
	}
	slices.SortStableFunc(out, func(a, b symRange) int { return a.class - b.class })
	if len(out) > maxRanges {
		out = out[:maxRanges]
	}
	return out, tick, nil
}
