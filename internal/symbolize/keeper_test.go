package symbolize

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hasPath says whether m maps a file whose path ends with suffix.
func hasPath(m *Maps, suffix string) bool {
	if m == nil {
		return false
	}
	for _, mp := range m.Mappings {
		if strings.HasSuffix(mp.Path, suffix) {
			return true
		}
	}
	return false
}

// TestKeeperBacksOffAndFollowsExec checks the keeper's schedule: a process
// is found through list (not /proc), read at once, then less and less
// often; one that execs is read again at the next look, so its snapshot is
// the new program's; and Stop takes a last snapshot of the processes left.
func TestKeeperBacksOffAndFollowsExec(t *testing.T) {
	cmd := exec.Command("sh", "-c", "read x; exec sleep 30")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := cmd.Process.Pid
	var listed atomic.Int64
	k := KeepMaps(nil, func() []int { listed.Add(1); return []int{pid} }, nil)
	defer k.Stop()
	if m := k.Snapshot(pid); m == nil || hasPath(m, "/sleep") {
		t.Fatalf("first snapshot (the shell): %+v", m)
	}
	// Backing off: after 2 s the next read is at least 800 ms away.
	time.Sleep(2 * time.Second)
	k.mu.Lock()
	every := k.next[pid].every
	k.mu.Unlock()
	if every < 800*time.Millisecond || every > MapsAtMost {
		t.Errorf("after 2 s the interval is %v, want 800ms..%v", every, MapsAtMost)
	}
	if listed.Load() < 5 {
		t.Errorf("list called %d times in 2 s, want one per look (%v)", listed.Load(), MapsEvery)
	}
	// The exec: read within two looks, however long the interval had grown.
	in.Write([]byte("\n"))
	deadline := time.Now().Add(3 * MapsEvery)
	for !hasPath(k.Snapshot(pid), "/sleep") {
		if time.Now().After(deadline) {
			t.Fatalf("the exec'd sleep's mappings not read within %v", 3*MapsEvery)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestKeeperBoundsGone keeps the snapshots of the last mapsKeptGone
// processes gone only, and shares the mappings of snapshots alike.
func TestKeeperBoundsGone(t *testing.T) {
	defer func(n int) { mapsKeptGone = n }(mapsKeptGone)
	mapsKeptGone = 2
	var mu sync.Mutex
	var pids []int
	k := KeepMaps(nil, func() []int { mu.Lock(); defer mu.Unlock(); return slices.Clone(pids) }, nil)
	defer k.Stop()
	for range 5 {
		cmd := exec.Command("sleep", "0.3")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		pids = append(pids, cmd.Process.Pid)
		mu.Unlock()
		time.Sleep(3 * MapsEvery / 2) // seen alive at a look
		cmd.Wait()
		mu.Lock()
		pids = pids[:len(pids)-1] // gone from the list, as from tracked
		mu.Unlock()
	}
	time.Sleep(2 * MapsEvery)
	k.mu.Lock()
	kept := len(k.maps)
	k.mu.Unlock()
	if kept > 2 {
		t.Errorf("%d snapshots kept of 5 processes gone, want at most mapsKeptGone (2)", kept)
	}
	if kept == 0 {
		t.Error("no snapshot kept: the processes were never read")
	}
	// The same process read twice: the second snapshot shares the first's
	// mappings.
	self := os.Getpid()
	k.keep(self)
	first := k.Snapshot(self)
	k.keep(self)
	second := k.Snapshot(self)
	if first == nil || second == nil || len(first.Mappings) == 0 || &first.Mappings[0] != &second.Mappings[0] {
		t.Error("two snapshots alike do not share their mappings")
	}
}

// TestKeeperFollowsEvents: with the probe's events, the keeper looks only
// when a process is due or an event says one started or exec'd (at most
// once every MapsEvery), not every MapsEvery: a process found at an event
// is read at once, and an idle tree is looked at as its processes fall
// due, less and less often.
func TestKeeperFollowsEvents(t *testing.T) {
	self := os.Getpid()
	var mu sync.Mutex
	pids := []int{self}
	var listed atomic.Int64
	changed := make(chan struct{}, 1)
	k := KeepMaps(nil, func() []int { listed.Add(1); mu.Lock(); defer mu.Unlock(); return slices.Clone(pids) }, changed)
	defer k.Stop()
	// Idle: due at 0.2, 0.6, 1.4 s after the first read (the intervals
	// doubling from MapsEvery), so three looks in 2 s where the polling
	// keeper makes ten.
	time.Sleep(2 * time.Second)
	if n := listed.Load(); n < 2 || n > 6 {
		t.Errorf("list called %d times in 2 s of an idle tree, want the 3 or so its process fell due (plus the first)", n)
	}
	// A new process, and its event: read within a look.
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	mu.Lock()
	pids = append(pids, cmd.Process.Pid)
	mu.Unlock()
	changed <- struct{}{}
	deadline := time.Now().Add(MapsEvery + 100*time.Millisecond)
	for !hasPath(k.Snapshot(cmd.Process.Pid), "/sleep") {
		if time.Now().After(deadline) {
			t.Fatalf("the new process's mappings not read within %v of its event", MapsEvery+100*time.Millisecond)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Events in a burst are read at most once every MapsEvery (and once
	// more, MapsEvery after the last: see follow).
	before, start := listed.Load(), time.Now()
	for range 20 {
		select {
		case changed <- struct{}{}:
		default:
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(start)
	if n, most := listed.Load()-before, int64(took/MapsEvery)+2; n > most {
		t.Errorf("list called %d times in %v of events, want at most %d: one per %v", n, took, most, MapsEvery)
	}
}
