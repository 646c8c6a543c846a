package timeacct

import (
	"os/exec"
	"testing"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/probe"
)

// TestKeptCollection: with the collections kept (the agent's windows), a
// second window takes the first's programs and maps instead of loading
// them, and finds them as loaded: a process the first window tracked, and
// that goes on making syscalls through the second, leaves nothing in it
// (no thread, no syscall: its task storage emptied by reset_sys_start,
// or its threads would still count as tracked), and the second window's
// own process is counted exactly, as by a probe loaded for it.
func TestKeptCollection(t *testing.T) {
	needRoot(t)
	probe.KeepLoaded(true)
	t.Cleanup(func() { probe.KeepLoaded(false) })
	busy := exec.Command("dd", "if=/dev/zero", "of=/dev/null", "bs=1")
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Process.Kill(); busy.Wait() })
	first, err := Start(Config{Roots: []int{busy.Process.Pid}, Syscalls: true})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	time.Sleep(100 * time.Millisecond)
	r1, err := first.Stop()
	if err != nil {
		t.Fatalf("stop: %v", err)
	}
	var ddCalls uint64
	for _, s := range r1.SyscallStats {
		if s.PID == busy.Process.Pid {
			ddCalls += s.Count
		}
	}
	if ddCalls < 100 {
		t.Fatalf("the first window counted %d syscalls of dd, want it busy", ddCalls)
	}
	taken, _ := probe.PoolCounts()
	c, res := observeWith(t, "syscalls", Config{Syscalls: true})
	if now, _ := probe.PoolCounts(); now != taken+1 {
		t.Errorf("the second window took %d collections from the pool, want 1", now-taken)
	}
	for _, th := range res.Threads {
		if th.PID == busy.Process.Pid {
			t.Errorf("dd's thread %d, tracked in the first window only, is in the second", th.TID)
		}
	}
	counts := map[string]uint64{}
	for _, s := range res.SyscallStats {
		if s.PID == busy.Process.Pid {
			t.Errorf("dd's %s (%d calls), tracked in the first window only, counted in the second", s.Name, s.Count)
		}
		if s.TID == c.tids[0] {
			counts[s.Name] += s.Count
		}
	}
	if counts["getppid"] != 1000 || counts["close"] != 500 {
		t.Errorf("the second window's child: getppid %d, close %d; want 1000 and 500", counts["getppid"], counts["close"])
	}
}
