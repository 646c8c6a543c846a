package probe

import (
	"fmt"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// TrackedSet is the eBPF probes' set of the workload's processes
// (bpf/tracked.bpf.h: a bitmap of tgids, bit tgid&63 of word tgid>>6),
// mapped into this process. Its bits are set and read with atomic
// operations, as the programs set and clear them (a fork, a process gone).
type TrackedSet struct {
	words []uint64
	mem   []byte
	// used is how many words Pids reads: those of the pids below the
	// kernel's pid_max when the set was opened (the map is sized for the
	// most pid_max can be, 2^22: 65,536 words where 32,768 pids need
	// 512; reading them all five times a second was 5% of the agent's
	// CPU time).
	used int
}

// OpenTracked maps m, a tracked map, into this process.
func OpenTracked(m *ebpf.Map) (*TrackedSet, error) {
	mem, err := mapArray(m, "tracked", 8, unix.PROT_READ|unix.PROT_WRITE)
	if err != nil {
		return nil, err
	}
	n := int(m.MaxEntries())
	used := min(n, (PidMax()+63)/64)
	return &TrackedSet{words: unsafe.Slice((*uint64)(unsafe.Pointer(&mem[0])), n), mem: mem, used: used}, nil
}

// Add adds pid's process; an error when pid is past the map's range.
func (t *TrackedSet) Add(pid int) error {
	if pid <= 0 || pid/64 >= len(t.words) {
		return fmt.Errorf("map tracked: pid %d out of its range (0, %d)", pid, len(t.words)*64)
	}
	atomic.OrUint64(&t.words[pid/64], 1<<(pid%64))
	return nil
}

// Has says whether pid's process is the workload's.
func (t *TrackedSet) Has(pid int) bool {
	return pid > 0 && pid/64 < len(t.words) && atomic.LoadUint64(&t.words[pid/64])>>(pid%64)&1 == 1
}

// Pids lists the workload's processes, in ascending order: those below
// pid_max as it was when the set was opened.
func (t *TrackedSet) Pids() []int {
	var out []int
	for i := range t.words[:t.used] {
		w := atomic.LoadUint64(&t.words[i])
		for w != 0 {
			b := bits.TrailingZeros64(w)
			out = append(out, i*64+b)
			w &= w - 1
		}
	}
	return out
}

// Close unmaps the set. Safe on nil and more than once.
func (t *TrackedSet) Close() error {
	if t == nil {
		return nil
	}
	t.words, t.used = nil, 0
	return unmap(&t.mem)
}
