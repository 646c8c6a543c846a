package symbolize

import (
	"strconv"
	"strings"
	"sync"
	"time"
)

// Namer names the frames of captured stacks: kernel frames from
// /proc/kallsyms, user frames from the ELF symbols of the files each
// process had mapped (as a Keeper kept them).
type Namer struct {
	kern *Kernel
	kerr error
	user *User
	maps *Keeper
}

// NewNamer loads the kernel's symbols; maps may be nil (user frames are
// then left as addresses).
func NewNamer(maps *Keeper) *Namer {
	kern, kerr := kernelNow()
	return &Namer{kern: kern, kerr: kerr, user: NewUser(), maps: maps}
}

// kernelReuse is how long a process reuses the kernel's symbols it read:
// reading /proc/kallsyms takes the kernel ~100 ms of formatting and us as
// much of parsing, which an agent observing window after window paid each
// window (16% of its CPU time). The kernel's own functions never move;
// a module loaded since is named on the next read.
const kernelReuse = 5 * time.Minute

var kernelCache struct {
	sync.Mutex
	k   *Kernel
	err error
	at  time.Time
}

// kernelNow is the kernel's symbols, read at most every kernelReuse.
func kernelNow() (*Kernel, error) {
	kernelCache.Lock()
	defer kernelCache.Unlock()
	if kernelCache.at.IsZero() || time.Since(kernelCache.at) > kernelReuse {
		kernelCache.k, kernelCache.err = LoadKernel("/proc/kallsyms")
		kernelCache.at = time.Now()
	}
	return kernelCache.k, kernelCache.err
}

// Name returns the named kernel and user frames of one pair of stacks and a
// note for each that could not be named in full (empty otherwise).
func (n *Namer) Name(pid int, kernel, user []uint64) (kf, uf []string, knote, unote string) {
	kf = kernelFrames(n.kern, kernel)
	if n.kerr != nil && len(kernel) > 0 {
		knote = "kernel frames not named: " + n.kerr.Error()
	}
	uf = []string{}
	m := n.maps.Snapshot(pid)
	for i, a := range user {
		if m == nil {
			uf = append(uf, hexAddr(a))
			continue
		}
		if !m.Contains(a) {
			unote = "the stack walk stopped at an address outside the process's code: a library built without frame pointers"
			break
		}
		uf = append(uf, n.user.Symbol(m, retAddr(a, i)))
	}
	switch {
	case m == nil && len(user) > 0 && n.maps == nil:
		unote = "user frames not named: no process's mappings were kept (not asked for)"
	case m == nil && len(user) > 0:
		unote = "user frames not named: the process's mappings were never read (it lived under " + MapsEvery.String() + ")"
	}
	return kf, uf, knote, unote
}

// Data names a data address of process pid (User.Data); "" when no
// variable of its files holds it or its mappings were never read.
func (n *Namer) Data(pid int, addr uint64) string {
	m := n.maps.Snapshot(pid)
	if m == nil {
		return ""
	}
	return n.user.Data(m, addr)
}

func hexAddr(a uint64) string { return "0x" + strconv.FormatUint(a, 16) }

// retAddr is the address to name for frame i: every frame but the innermost
// is a return address, which for a call at the end of a function is
// already the next function's first byte.
func retAddr(a uint64, i int) uint64 {
	if i > 0 && a > 0 {
		return a - 1
	}
	return a
}

// kernelFrames names the kernel frames, dropping those of the probe itself
// (the BPF program and bpf_trace_run*, which took the stack) and the
// scheduler's own frames above them.
func kernelFrames(kern *Kernel, addrs []uint64) []string {
	out := []string{}
	for i, a := range addrs {
		name := kern.Symbol(retAddr(a, i))
		if strings.HasPrefix(name, "bpf_trace_run") {
			out = out[:0]
			continue
		}
		// Every sleep goes through the scheduler: its frames tell nothing.
		if len(out) == 0 && (strings.HasPrefix(name, "__schedule+") || strings.HasPrefix(name, "schedule+")) {
			continue
		}
		out = append(out, name)
	}
	return out
}
