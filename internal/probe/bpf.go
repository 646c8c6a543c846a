package probe

import (
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
)

// The BPF helpers every eBPF probe needs, in one place.

// NewCollection loads spec for the probe named what. A verifier rejection
// carries the verifier's whole log, which is what anyone debugging it
// needs first. With KeepLoaded on it takes a kept collection of the same
// spec instead when there is one (pool.go); the probe gives it back with
// Release once its links are closed.
func NewCollection(what string, spec *ebpf.CollectionSpec, opts ebpf.CollectionOptions) (*ebpf.Collection, error) {
	kept, key, keepable := take(what, spec, opts)
	if kept != nil {
		return kept, nil
	}
	// Fails without CAP_SYS_RESOURCE and is not needed since 5.11 (memcg
	// accounting of BPF memory), so the error is ignored.
	_ = rlimit.RemoveMemlock()
	if opts.Cache == nil {
		opts.Cache = sysinfo.KernelBTF()
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, opts)
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("load %s: %w\n%+v", what, err, ve)
		}
		return nil, fmt.Errorf("load %s: %w", what, err)
	}
	if keepable {
		return keep(what, key, spec, opts, coll), nil
	}
	return coll, nil
}

// CloseLinks detaches links in parallel: closing a classic tracepoint's
// perf event waits ~70 ms here (an RCU grace period), so one after the
// other the sync tracepoints alone took most of a second.
func CloseLinks(links []link.Link) error {
	errs := make([]error, len(links))
	var wg sync.WaitGroup
	for i, l := range links {
		wg.Go(func() { errs[i] = l.Close() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// MissingTracepoints says which of the named tracepoints the kernel's BTF
// lacks ("" if none): tp_btf programs load only against a tracepoint the
// kernel has. why ends the sentence when some are missing.
func MissingTracepoints(names []string, why string) string {
	spec, err := sysinfo.KernelSpec()
	if err != nil {
		return "no kernel BTF (" + err.Error() + ")"
	}
	var missing []string
	for _, n := range names {
		if !sysinfo.HasBTFTracepoint(spec, n) {
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return "this kernel has no " + strings.Join(missing, ", ") + " tracepoint" + why
}

// MonotonicNs reads CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns.
func MonotonicNs() uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return uint64(ts.Nano())
}

// PathOf joins a file's names, kept leaf first by the kernel side
// (bpf/path.bpf.h), below the mount point of its filesystem ("[dev 8:1]"
// when none is known).
func PathOf(mount, dev string, names [8][64]uint8, depth uint32, truncated bool) string {
	var b strings.Builder
	if mount == "" {
		b.WriteString("[dev " + dev + "]")
	} else if mount != "/" {
		b.WriteString(mount)
	}
	if truncated {
		b.WriteString("/...")
	}
	for i := int(min(depth, uint32(len(names)))) - 1; i >= 0; i-- {
		b.WriteString("/" + unix.ByteSliceToString(names[i][:]))
	}
	if b.Len() == 0 {
		return "/"
	}
	return b.String()
}

// StackLookup returns a function that reads stack id from m, a
// BPF_MAP_TYPE_STACK_TRACE map, once per id: the frames up to the first
// zero, or why there are none (StackErr for an id < 0, a lost stack).
func StackLookup(m *ebpf.Map) func(id int32) ([]uint64, string) {
	stacks := map[int32][]uint64{}
	return func(id int32) ([]uint64, string) {
		if id < 0 {
			return nil, StackErr(id)
		}
		if st, ok := stacks[id]; ok {
			return st, ""
		}
		raw := make([]uint64, m.ValueSize()/8)
		if err := m.Lookup(uint32(id), raw); err != nil {
			return nil, "stack lost: " + err.Error()
		}
		n := slices.Index(raw, 0)
		if n < 0 {
			n = len(raw)
		}
		stacks[id] = raw[:n:n]
		return stacks[id], ""
	}
}

// StackErr says why bpf_get_stackid returned no stack (id < 0).
func StackErr(id int32) string {
	switch {
	case id == -1:
		return "not taken: asleep since before the probe attached"
	case -id == int32(unix.EFAULT):
		return "no stack (a kernel thread has no user stack)"
	case -id == int32(unix.ENOMEM), -id == int32(unix.EEXIST):
		return "stack map full: stack not kept"
	}
	return fmt.Sprintf("stack not taken (error %d)", -id)
}

// CPUClock is a BPF perf_event program attached to a software cpu-clock
// event on every online CPU: it works where the hardware PMU does not, as
// in most VMs.
type CPUClock struct {
	fds   []int
	links []link.Link
}

// AttachCPUClock attaches prog to a cpu-clock event sampling at hz on every
// online CPU. On error, what was attached is closed.
func AttachCPUClock(what string, prog *ebpf.Program, hz int) (_ *CPUClock, err error) {
	c := &CPUClock{}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	online, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, fmt.Errorf("%s: online CPUs: %w", what, err)
	}
	for _, cpu := range sysinfo.ParseCPUList(strings.TrimSpace(string(online))) {
		// A fixed period (cpu-clock counts nanoseconds), not a target
		// frequency: the kernel's frequency mode re-tunes the period as
		// the load changes, so a thread that runs in short bursts was
		// sampled 78% as often as its cpu time said.
		attr := unix.PerfEventAttr{
			Type:   unix.PERF_TYPE_SOFTWARE,
			Config: unix.PERF_COUNT_SW_CPU_CLOCK,
			Sample: uint64(1e9 / hz),
		}
		attr.Size = uint32(unsafe.Sizeof(attr))
		fd, err := unix.PerfEventOpen(&attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			return nil, fmt.Errorf("%s: open cpu-clock on CPU %d: %w", what, cpu, err)
		}
		c.fds = append(c.fds, fd)
		l, err := link.AttachRawLink(link.RawLinkOptions{Target: fd, Program: prog, Attach: ebpf.AttachPerfEvent})
		if err != nil {
			return nil, fmt.Errorf("%s: attach to cpu-clock on CPU %d: %w", what, cpu, err)
		}
		c.links = append(c.links, l)
	}
	return c, nil
}

// Detach stops the sampling; the events stay open until Close.
func (c *CPUClock) Detach() error {
	if c == nil {
		return nil
	}
	err := CloseLinks(c.links)
	c.links = nil
	return err
}

// Close detaches the program and closes the events. Safe to call twice and
// on nil.
func (c *CPUClock) Close() {
	if c == nil {
		return
	}
	c.Detach()
	for _, fd := range c.fds {
		unix.Close(fd)
	}
	c.fds = nil
}

// RunIter runs a BPF iterator program once, to its end (a seed of entries,
// a sweep of a map): it attaches it with opts, reads what it writes and
// detaches it.
func RunIter(opts link.IterOptions) error {
	it, err := link.AttachIter(opts)
	if err != nil {
		return fmt.Errorf("attach: %w", err)
	}
	defer it.Close()
	rd, err := it.Open()
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer rd.Close()
	if _, err := io.Copy(io.Discard, rd); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	return nil
}

// MissedRuns reads the recursion misses of progs, summed by name: runs the
// kernel skipped because the program was already running on that CPU (an
// interrupt's tracepoint firing inside it). They are counted whether or not
// BPF statistics are on. Nil when there are none.
func MissedRuns(progs iter.Seq2[string, *ebpf.Program]) map[string]int64 {
	var m map[string]int64
	for name, prog := range progs {
		if prog == nil {
			continue
		}
		s, err := ProgStats(prog)
		if err != nil || s.RecursionMisses == 0 {
			continue
		}
		if m == nil {
			m = map[string]int64{}
		}
		m[name] += int64(s.RecursionMisses)
	}
	return m
}
