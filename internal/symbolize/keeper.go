package symbolize

import (
	"hash/maphash"
	"maps"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/proctree"
)

// MapsEvery is how often a Keeper looks for new processes in the observed
// trees, and how soon after its first read a process's mappings are read
// again: a process that exits keeps its last snapshot, so user stacks of a
// short-lived process resolve if it lived this long.
const MapsEvery = 200 * time.Millisecond

// MapsAtMost is the longest a Keeper waits between two reads of a
// process's mappings. Each read of one process waits twice as long as the
// last, from MapsEvery: a process maps its code (its libraries, those it
// loads) mostly as it starts, and a long-lived server's maps file is long
// (a mapping per thread stack), so reading it five times a second cost a
// busy 2-CPU machine's server 1-2% of its throughput. An exec starts over
// (the executable changed), and Stop reads every process still there.
const MapsAtMost = 6400 * time.Millisecond

// MapsKeptGone is how many processes gone a Keeper keeps the snapshots of,
// the most recently gone: a workload starting processes without end (a
// process every 100 ms, its pids wrapping every 100 s with its threads')
// otherwise leaves a snapshot for every pid any of them had, up to
// pid_max of them. Snapshots alike (the same program, mapped where it was
// mapped before: a non-PIE executable, or no ASLR) share their mappings.
const MapsKeptGone = 4096

// mapsKeptGone is MapsKeptGone, a variable for the tests.
var mapsKeptGone = MapsKeptGone

// Keeper reads /proc/PID/maps of every process of some trees periodically,
// keeping the last snapshot of each, so that the user stacks of a process
// can be named after it exited.
type Keeper struct {
	roots []int
	list  func() []int // the trees' processes, nil: walk /proc
	mu    sync.Mutex
	maps  map[int]*Maps
	next  map[int]kept         // when to read each process again (under mu)
	gone  []int                // processes gone with a snapshot kept, oldest first (under mu)
	alike map[uint64][]Mapping // snapshots' mappings by mappingsHash (under mu)
	seed  maphash.Seed
	done  chan struct{}
	wg    sync.WaitGroup
}

// kept is when a process's mappings are to be read again, and what its
// executable was when they were read.
type kept struct {
	at    time.Time
	every time.Duration
	exe   string
}

// KeepMaps starts keeping the mappings of the trees below roots until Stop.
// list, when not nil, gives the trees' processes (the eBPF probe's own set
// of them); without it the keeper walks /proc for them. changed, when not
// nil, signals that a process of the trees started or exec'd (the eBPF
// probe's events): the keeper then reads when it signals and when a
// process is due, instead of looking every MapsEvery.
func KeepMaps(roots []int, list func() []int, changed <-chan struct{}) *Keeper {
	k := &Keeper{roots: roots, list: list, maps: map[int]*Maps{}, next: map[int]kept{}, alike: map[uint64][]Mapping{}, seed: maphash.MakeSeed(), done: make(chan struct{})}
	k.read(time.Now())
	if changed == nil {
		k.wg.Go(k.poll)
	} else {
		k.wg.Go(func() { k.follow(changed) })
	}
	return k
}

// poll reads every MapsEvery.
func (k *Keeper) poll() {
	t := time.NewTicker(MapsEvery)
	defer t.Stop()
	for {
		select {
		case <-k.done:
			return
		case now := <-t.C:
			k.read(now)
		}
	}
}

// follow reads when changed signals, at most once every MapsEvery, and
// when the next process is due. An idle workload's keeper then wakes once
// every MapsAtMost, not five times a second: a profile of the agent put 9%
// of its CPU in the keeper and 21% in Go's sysmon, which polls for about a
// millisecond after each wake-up of an otherwise idle process. A read for
// a signal is followed by another MapsEvery later: a process that started
// after the first, whose own event did not wake the reader (it is woken
// at most once every MapsEvery: bpf/timeacct.bpf.c proc_event), is found
// then.
func (k *Keeper) follow(changed <-chan struct{}) {
	last := time.Now()
	signalled := false // a signal came since the last read
	t := time.NewTimer(k.untilDue(last))
	defer t.Stop()
	for {
		select {
		case <-k.done:
			return
		case <-changed:
			signalled = true
			if wait := MapsEvery - time.Since(last); wait > 0 {
				t.Reset(wait) // sooner than any process is due
				continue
			}
		case <-t.C:
		}
		last = time.Now()
		k.read(last)
		next := k.untilDue(last)
		if signalled {
			next = min(next, MapsEvery)
		}
		signalled = false
		t.Reset(next)
	}
}

// untilDue is how long from now until the first process is due, at most
// MapsAtMost.
func (k *Keeper) untilDue(now time.Time) time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	d := MapsAtMost
	for _, n := range k.next {
		d = min(d, n.at.Sub(now))
	}
	return max(d, time.Millisecond)
}

// pids is the trees' processes now, roots included.
func (k *Keeper) pids() []int {
	var out []int
	if k.list != nil {
		out = k.list()
	} else {
		out, _ = proctree.Below("/proc", k.roots)
	}
	return append(out, k.roots...)
}

// read reads the mappings of the processes that are new or due.
func (k *Keeper) read(now time.Time) {
	seen := map[int]bool{}
	for _, pid := range k.pids() {
		if seen[pid] {
			continue
		}
		seen[pid] = true
		if k.due(pid, now) {
			k.keep(pid)
		}
	}
	// Processes gone are read no more; the snapshots of the last
	// MapsKeptGone of them stay.
	k.mu.Lock()
	defer k.mu.Unlock()
	for pid := range k.next {
		if !seen[pid] {
			delete(k.next, pid)
			k.gone = append(k.gone, pid)
		}
	}
	for len(k.gone) > mapsKeptGone {
		pid := k.gone[0]
		k.gone = k.gone[1:]
		if _, back := k.next[pid]; !back { // not a new process with the pid since
			delete(k.maps, pid)
		}
	}
}

// due says whether pid's mappings are to be read now: it is new, its
// interval has passed (the next one is twice as long), or it has exec'd.
func (k *Keeper) due(pid int, now time.Time) bool {
	exe, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	k.mu.Lock()
	defer k.mu.Unlock()
	n, ok := k.next[pid]
	if ok && exe == n.exe && now.Before(n.at) {
		return false
	}
	every := MapsEvery
	if ok && exe == n.exe {
		every = min(2*n.every, MapsAtMost)
	}
	k.next[pid] = kept{at: now.Add(every), every: every, exe: exe}
	return true
}

// keep takes a snapshot of pid's mappings unless it has none left: an
// exited process not yet reaped (a zombie) shows an empty maps file, which
// must not replace the snapshot taken while it ran.
func (k *Keeper) keep(pid int) {
	m, err := ReadMaps(pid)
	if err != nil || m == nil || len(m.Mappings) == 0 {
		return
	}
	key := mappingsHash(k.seed, m.Mappings)
	k.mu.Lock()
	if same, ok := k.alike[key]; ok && slices.Equal(same, m.Mappings) {
		m.Mappings = same
	} else {
		// Interned no longer than the snapshots are kept: past as many
		// layouts as processes gone are kept, the table starts over.
		if len(k.alike) >= mapsKeptGone {
			clear(k.alike)
		}
		k.alike[key] = m.Mappings
	}
	k.maps[pid] = m
	k.mu.Unlock()
}

// mappingsHash hashes a snapshot's mappings, for finding one alike.
func mappingsHash(seed maphash.Seed, ms []Mapping) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	for _, m := range ms {
		maphash.WriteComparable(&h, m)
	}
	return h.Sum64()
}

// Snapshot returns pid's last snapshot, nil if none was taken. Safe on nil.
func (k *Keeper) Snapshot(pid int) *Maps {
	if k == nil {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.maps[pid]
}

// Stop ends the periodic reads and takes a last snapshot of the processes
// still there. Safe on nil and more than once.
func (k *Keeper) Stop() {
	if k == nil {
		return
	}
	select {
	case <-k.done:
		return
	default:
	}
	close(k.done)
	k.wg.Wait()
	// The processes alive at the last look: a pid gone before may be
	// another program's now.
	k.mu.Lock()
	live := slices.Collect(maps.Keys(k.next))
	k.mu.Unlock()
	for _, pid := range live {
		k.keep(pid)
	}
}
