package export

import (
	"strconv"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// kernelFile names the kernel as the object of its frames, as perf does.
const kernelFile = "[kernel.kallsyms]"

// frame is one symbolised frame of a record's stack, taken apart.
// internal/symbolize writes "function+0xoff" for a kernel frame,
// "function+0xoff (file)" for a resolved user frame, "0xaddr (file)" for an
// unresolved one inside a mapping, and "0xaddr" outside any.
type frame struct {
	// Function is the symbol without its offset, or the address in hex
	// when the frame was not resolved.
	Function string
	// File is the object (the base name of the mapped file, kernelFile for
	// the kernel), "" when the record does not say.
	File     string
	Addr     uint64
	Resolved bool
	Kernel   bool
}

func parseFrame(s string, kernel bool) frame {
	f := frame{Kernel: kernel}
	if kernel {
		f.File = kernelFile
	}
	if i := strings.LastIndex(s, " ("); i > 0 && strings.HasSuffix(s, ")") {
		f.File = s[i+2 : len(s)-1]
		s = s[:i]
	}
	if a, ok := hexAddr(s); ok {
		f.Function, f.Addr = s, a
		return f
	}
	if i := strings.LastIndex(s, "+0x"); i > 0 {
		if _, ok := hexAddr(s[i+1:]); ok {
			s = s[:i]
		}
	}
	f.Function, f.Resolved = s, true
	return f
}

// hexAddr parses "0x1f2e".
func hexAddr(s string) (uint64, bool) {
	if !strings.HasPrefix(s, "0x") || len(s) == 2 {
		return 0, false
	}
	a, err := strconv.ParseUint(s[2:], 16, 64)
	return a, err == nil
}

// names tells the comm of each thread and process a record mentions.
type names struct {
	thread map[[2]int]string
	// target is the comm of the process `observe -p` followed.
	target map[int]string
}

func newNames(run *model.Run) names {
	n := names{thread: map[[2]int]string{}, target: map[int]string{}}
	add := func(pid, tid int, comm string) {
		k := [2]int{pid, tid}
		if _, ok := n.thread[k]; !ok && comm != "" {
			n.thread[k] = comm
		}
	}
	if ta := run.TimeAccounting; ta != nil {
		for _, t := range ta.Threads {
			add(t.PID, t.TID, t.Comm)
		}
		for _, s := range ta.OnCPU {
			add(s.PID, s.TID, s.Comm)
		}
	}
	if o := run.Observation; o != nil {
		for _, t := range o.Totals.Threads {
			add(t.PID, t.TID, t.Comm)
		}
	}
	if p := run.Target.PID; p != nil && p.Comm != "" {
		n.target[p.PID] = p.Comm
	}
	return n
}

// Thread is a thread's comm, or "tid-N" when the record does not know it.
func (n names) Thread(pid, tid int) string {
	if c, ok := n.thread[[2]int{pid, tid}]; ok {
		return c
	}
	return "tid-" + strconv.Itoa(tid)
}

// Process is the comm of a process's main thread (whose tid is its pid),
// or "pid-N" when the record does not know it.
func (n names) Process(pid int) string {
	if c, ok := n.thread[[2]int{pid, pid}]; ok {
		return c
	}
	if c, ok := n.target[pid]; ok {
		return c
	}
	return "pid-" + strconv.Itoa(pid)
}
