package probe

import (
	"os"
	"slices"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// TestTrackedSet sets and lists bits of a map shaped as bpf/tracked.bpf.h's
// through the mapping, reads them back through the map (as the programs
// see them), and refuses a map of another shape.
func TestTrackedSet(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: making an eBPF map needs root")
	}
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1 << 16, Flags: unix.BPF_F_MMAPABLE})
	if err != nil {
		t.Skipf("no mmapable array here: %v", err)
	}
	defer m.Close()
	set, err := OpenTracked(m)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	top := PidMax() - 1 // the highest pid the kernel hands out now
	pids := []int{1, 63, 64, 4242, top}
	for _, pid := range append(pids, 1<<22-1) {
		if err := set.Add(pid); err != nil {
			t.Fatalf("Add(%d): %v", pid, err)
		}
	}
	// Pids lists those below pid_max; a pid past it (pid_max raised
	// since) is in the set all the same.
	if got := set.Pids(); !slices.Equal(got, pids) {
		t.Errorf("Pids() = %v, want %v", got, pids)
	}
	if !set.Has(4242) || set.Has(4243) || set.Has(0) || set.Has(1<<22) || !set.Has(1<<22-1) {
		t.Errorf("Has: 4242 %v, 4243 %v, 0 %v, 1<<22 %v, 1<<22-1 %v", set.Has(4242), set.Has(4243), set.Has(0), set.Has(1<<22), set.Has(1<<22-1))
	}
	var w uint64
	if err := m.Lookup(uint32(4242/64), &w); err != nil || w != 1<<(4242%64) {
		t.Errorf("word %d through the map: %#x, %v; want bit %d", 4242/64, w, err, 4242%64)
	}
	for _, bad := range []int{0, -1, 1 << 22} {
		if err := set.Add(bad); err == nil {
			t.Errorf("Add(%d) accepted", bad)
		}
	}
	h, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: 4, ValueSize: 1, MaxEntries: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := OpenTracked(h); err == nil {
		t.Error("a hash map was taken for the bitmap")
	}
}
