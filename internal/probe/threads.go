package probe

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// pidMaxLimit is PID_MAX_LIMIT on 64-bit kernels, the most pid_max can be.
const pidMaxLimit = 1 << 22

// PidMax is the kernel's pid_max now (/proc/sys/kernel/pid_max), or
// PID_MAX_LIMIT when it cannot be read.
func PidMax() int {
	if b, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 && n <= pidMaxLimit {
			return n
		}
	}
	return pidMaxLimit
}

// ThreadIndexWords is how many words the thread index (bpf/threads.bpf.h
// thread_idx: four 16-bit slots a word) needs for every thread id the
// kernel hands out now: a quarter of PidMax. A thread id past it (pid_max
// raised after the probe loaded) has no entry and is counted as dropped.
func ThreadIndexWords() uint32 {
	return uint32((PidMax() + 3) / 4)
}

// SizeThreadIndex sizes spec's thread_idx: to idx's size when it is passed
// in from the probe that owns it (a map put in place of another must be
// its size), else to ThreadIndexWords.
func SizeThreadIndex(spec *ebpf.CollectionSpec, idx *ebpf.Map) {
	m := spec.Maps["thread_idx"]
	if m == nil {
		return
	}
	if idx != nil {
		m.MaxEntries = idx.MaxEntries()
		return
	}
	m.MaxEntries = ThreadIndexWords()
}

// mapArray maps m, an mmapable array of size-byte values, with prot
// (unix.PROT_*): what name calls the map in an error.
func mapArray(m *ebpf.Map, name string, size, prot int) ([]byte, error) {
	if m.Type() != ebpf.Array || int(m.ValueSize()) != size || m.Flags()&unix.BPF_F_MMAPABLE == 0 {
		return nil, fmt.Errorf("map %s: %v of %d-byte values, flags %#x: not an mmapable array of %d-byte values", name, m.Type(), m.ValueSize(), m.Flags(), size)
	}
	mem, err := unix.Mmap(m.FD(), 0, int(m.MaxEntries())*size, prot, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map %s: mmap: %w", name, err)
	}
	return mem, nil
}

// unmap unmaps *mem, once.
func unmap(mem *[]byte) error {
	if *mem == nil {
		return nil
	}
	err := unix.Munmap(*mem)
	*mem = nil
	return err
}

// Slots is an mmapable array map (bpf/threads.bpf.h threads) mapped into
// this process, read in place.
type Slots struct {
	mem  []byte
	size int // bytes of a value
	n    int
}

// MapSlots maps m, an mmapable array of values of size bytes.
func MapSlots(m *ebpf.Map, size int) (*Slots, error) {
	mem, err := mapArray(m, m.String(), size, unix.PROT_READ)
	if err != nil {
		return nil, err
	}
	return &Slots{mem: mem, size: size, n: int(m.MaxEntries())}, nil
}

// Len is how many slots there are.
func (s *Slots) Len() int { return s.n }

// At is slot i's bytes, as the programs left them (they may be changing
// them meanwhile: copy before reading fields that must agree).
func (s *Slots) At(i int) []byte { return s.mem[i*s.size : (i+1)*s.size] }

// Close unmaps the slots. Safe on nil and more than once.
func (s *Slots) Close() error {
	if s == nil {
		return nil
	}
	return unmap(&s.mem)
}

// Shared are the maps the time accounting lends the other eBPF probes that
// follow the same workload: the tracked processes and each thread's entry
// with its index (bpf/tracked.bpf.h, bpf/threads.bpf.h). They are put in
// place of the probes' own maps of those names at load.
type Shared struct {
	Tracked, Threads, ThreadIdx *ebpf.Map
}

// Complete says whether every map was lent.
func (sh Shared) Complete() bool {
	return sh.Tracked != nil && sh.Threads != nil && sh.ThreadIdx != nil
}

// Replacements are the maps to put in place at load (those lent), and
// sizes spec's index to the lent one.
func (sh Shared) Replacements(spec *ebpf.CollectionSpec) map[string]*ebpf.Map {
	out := map[string]*ebpf.Map{}
	for name, m := range map[string]*ebpf.Map{"tracked": sh.Tracked, "threads": sh.Threads, "thread_idx": sh.ThreadIdx} {
		if m != nil && spec.Maps[name] != nil {
			out[name] = m
		}
	}
	SizeThreadIndex(spec, sh.ThreadIdx)
	return out
}
