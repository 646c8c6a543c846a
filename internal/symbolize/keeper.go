package symbolize

import (
	"sync"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/proctree"
)

// MapsEvery is how often a Keeper reads the mappings of the observed
// processes: a process that exits keeps its last snapshot, so user stacks
// of a short-lived process resolve if it lived this long.
const MapsEvery = 200 * time.Millisecond

// Keeper reads /proc/PID/maps of every process of some trees periodically,
// keeping the last snapshot of each, so that the user stacks of a process
// can be named after it exited.
type Keeper struct {
	roots []int
	mu    sync.Mutex
	maps  map[int]*Maps
	done  chan struct{}
	wg    sync.WaitGroup
}

// KeepMaps starts keeping the mappings of the trees below roots until Stop.
func KeepMaps(roots []int) *Keeper {
	k := &Keeper{roots: roots, maps: map[int]*Maps{}, done: make(chan struct{})}
	k.read()
	k.wg.Go(func() {
		t := time.NewTicker(MapsEvery)
		defer t.Stop()
		for {
			select {
			case <-k.done:
				return
			case <-t.C:
				k.read()
			}
		}
	})
	return k
}

func (k *Keeper) read() {
	for _, root := range k.roots {
		pids, _ := proctree.Descendants("/proc", root)
		for _, pid := range append(pids, root) {
			k.keep(pid)
		}
	}
}

// keep takes a snapshot of pid's mappings unless it has none left: an
// exited process not yet reaped (a zombie) shows an empty maps file, which
// must not replace the snapshot taken while it ran.
func (k *Keeper) keep(pid int) {
	m, err := ReadMaps(pid)
	if err != nil || m == nil || len(m.Mappings) == 0 {
		return
	}
	k.mu.Lock()
	k.maps[pid] = m
	k.mu.Unlock()
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
	for pid := range k.maps {
		k.keep(pid)
	}
}
