package analyze

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// The critical path. Summed over the busy threads, a thread that waits for
// another outvotes the one doing the work: fio's main process sleeps while
// its worker reads, rsync's sender and generator wait on pipes for the
// receiver, which syncs. The wait-for graph (model.Wait, from sched_waking
// in the waker's context) says who ended each wait, and a wait that another
// thread of the workload ended is time spent on that thread's account:
// it is charged to what that thread was doing meanwhile, and along chains
// (wPerf's cascaded redistribution, Perfetto's critical path). Only waits
// for a peer's work move (sleep: pipes, sockets, condition variables,
// children; other): a lock wait stays lock, as the threads' serialising
// is its cause, and a storage wait stays storage.
//
// Per thread i, A_i is its own time over the cells of time by activity
// and state (activity.go; its waits for peers taken out), and P_ij the
// share of its wall time it waited for thread j. Its critical-path
// distribution over the cells solves D_i = A_i + sum_j P_ij D_j, and
// the share of it that is thread j's own time (what j carried) solves
// E_i = e_i a_i + sum_j P_ij E_j (a_i the share of its own time); both
// are found by iteration (criticalRounds), which converges when every
// cycle of waits leaks some own time, as any real thread does; what a
// cycle of pure waiting leaves unassigned stays in the cells of the waits,
// the waiter's own. D is n x cells and E n x n, O(n^2 + n cells) in
// memory, where one distribution over (thread, category) per thread took
// n x n x categories.
// Without interval-level data a waiter is charged with the waited-for
// thread's whole-window distribution.
//
// Pollers: a thread mostly off the CPU (pollerOffShare of its time) that
// slept on timers nearly all that time (pollerTimerShare of it asleep until
// a timer; at most pollerCPUShare on a CPU: fio's main thread starting up
// ran 11% of a 1.4 s run), or waited the whole window for something that
// did not come (as much of it in a wait not ended: an io_uring completion
// thread of MariaDB's, "other 100%"), that others waited for little (10%
// of its time), while
// another thread worked (half its critical-path time, workShare, neither
// sleep nor waiting for something outside), is a poller (fio's main thread
// checking on its workers every 10 ms): it is listed, and left out of the
// critical path.
// Without a worker, timed sleeps are what the workload does (a 2 ms timer
// loop, a rate-limited job), and the verdict says so.
const (
	criticalRounds   = 200
	criticalMaxBusy  = 512
	pollerTimerShare = 0.8
	pollerOffShare   = 0.6
	pollerCPUShare   = 0.25
	workShare        = 0.5
)

// criticalPath fills ta.CriticalPath, the threads' CriticalSec and Poller,
// and each cell's time on the path (c.path), from ta.Waits and the cells;
// nothing without them (procfs, older records) or with more busy threads
// than criticalMaxBusy.
func criticalPath(ta *model.TimeAccounting, c *cells) {
	ta.CriticalPath = nil
	for i := range ta.Threads {
		ta.Threads[i].Poller, ta.Threads[i].CriticalSec = false, 0
	}
	if c == nil {
		return
	}
	c.path = nil
	n := len(c.busy)
	if n == 0 || n > criticalMaxBusy {
		return
	}
	X := len(c.keys)
	known := map[string]bool{}
	for _, name := range model.Categories {
		known[name] = true
	}
	own := make([][]float64, n)      // own[i][x]: seconds
	waitFor := make([][]float64, n)  // waitFor[i][j]: seconds i waited for j
	waitCell := make([][]float64, n) // waitCell[i][x]: of i's waits for peers, by cell
	timerSleep := make([]float64, n)
	unended := make([]float64, n) // blocked, and not woken in the window
	waitedOn := make([]float64, n)
	for k := range n {
		own[k] = c.vector(k)
		waitFor[k] = make([]float64, n)
		waitCell[k] = make([]float64, X)
	}
	for _, w := range ta.Waits {
		k, ok := c.thread(w.PID, w.TID)
		if !ok || !known[w.Category] {
			continue
		}
		if w.Waker == model.WakerTimer && w.Category == model.CatSleep {
			timerSleep[k] += w.Seconds
		}
		if w.Waker == model.WakerNone && w.Category != model.CatCPUWait {
			unended[k] += w.Seconds
		}
		// Only a wait for a peer's work moves: a sleep (a pipe, a
		// socket, a condition variable, a child) or an unclassified
		// wait. A lock wait stays: its cause is that the threads
		// serialise, not what the holder does (four threads taking
		// turns on a mutex read "cpu" when it moved); a storage wait
		// another thread ended (a page under its IO) stays storage.
		if w.Waker != model.WakerPeer || w.Category != model.CatSleep && w.Category != model.CatOther {
			continue
		}
		j, ok := c.thread(w.WakerPID, w.WakerTID)
		if !ok || j == k {
			continue
		}
		x, ok := c.idx[cellKey{w.Activity, w.Category, model.StatePeer, w.Category}]
		if !ok {
			continue
		}
		s := math.Min(w.Seconds, own[k][x])
		own[k][x] -= s
		waitFor[k][j] += s
		waitCell[k][x] += s
		waitedOn[j] += s
	}

	walls := make([]float64, n)
	for k, i := range c.busy {
		walls[k] = ta.Threads[i].WallSec
	}
	// a[k]: k's own time over the cells, as shares of its wall time;
	// alpha[k] their sum.
	a := make([][]float64, n)
	alpha := make([]float64, n)
	for k := range n {
		a[k] = make([]float64, X)
		for x, s := range own[k] {
			a[k][x] = s / walls[k]
			alpha[k] += a[k][x]
		}
	}
	d := iterate(n, X, waitFor, walls, func(k int, row []float64) { copy(row, a[k]) })
	e := iterate(n, n, waitFor, walls, func(k int, row []float64) {
		clear(row)
		row[k] = alpha[k]
	})
	// What a cycle of waiting left unassigned stays in the waits' own
	// cells, carried by the waiter.
	for k := range n {
		sum, sumE, waits := 0.0, 0.0, 0.0
		for _, v := range d[k] {
			sum += v
		}
		for _, v := range e[k] {
			sumE += v
		}
		for _, s := range waitCell[k] {
			waits += s
		}
		if rest := 1 - sum; rest > 1e-9 && waits > 0 {
			for x, s := range waitCell[k] {
				d[k][x] += rest * s / waits
			}
		}
		if rest := 1 - sumE; rest > 1e-9 && waits > 0 {
			e[k][k] += rest
		}
	}

	// Pollers, once the workers are known.
	// A worker spends half its critical-path time (workShare) running,
	// waiting for a CPU, on storage or on locks; a poller candidate sleeps
	// on timers or waits unended, runs little, and is little waited for.
	active := map[string]bool{model.CatCPU: true, model.CatCPUWait: true, model.CatStorageRead: true,
		model.CatStorageWrite: true, model.CatStorageSync: true, model.CatLock: true}
	candidate := make([]bool, n)
	worker := false
	for k, i := range c.busy {
		t := ta.Threads[i]
		off := t.WallSec - t.Seconds[model.CatCPU] - t.Seconds[model.CatCPUWait]
		apart := off >= pollerOffShare*t.WallSec && (timerSleep[k] >= pollerTimerShare*off || unended[k] >= pollerTimerShare*off)
		candidate[k] = apart && waitedOn[k] <= 0.1*t.WallSec && t.Seconds[model.CatCPU] <= pollerCPUShare*t.WallSec
		if candidate[k] {
			continue
		}
		share := 0.0
		for x, v := range d[k] {
			if active[c.keys[x].category] {
				share += v
			}
		}
		if share >= workShare {
			worker = true
		}
	}
	poller := make([]bool, n)
	if worker {
		for k, i := range c.busy {
			if candidate[k] {
				poller[k] = true
				ta.Threads[i].Poller = true
			}
		}
	}
	ta.CriticalPath = map[string]float64{}
	c.path = make([]float64, X)
	carried := make([]float64, n)
	for k := range n {
		if poller[k] {
			continue
		}
		for x, v := range d[k] {
			if s := walls[k] * v; s != 0 {
				ta.CriticalPath[c.keys[x].category] += s
				c.path[x] += s
			}
		}
		for j, v := range e[k] {
			carried[j] += walls[k] * v
		}
	}
	for k, i := range c.busy {
		ta.Threads[i].CriticalSec = carried[k]
	}
}

// iterate solves R_k = B_k + sum_j P_kj R_j for rows of width w, where
// P_kj = waitFor[k][j] / walls[k] and base fills B_k, by iteration from
// R = B until no element moves by 1e-9 (or criticalRounds).
func iterate(n, w int, waitFor [][]float64, walls []float64, base func(k int, row []float64)) [][]float64 {
	r := make([][]float64, n)
	next := make([][]float64, n)
	for k := range n {
		r[k], next[k] = make([]float64, w), make([]float64, w)
		base(k, r[k])
	}
	for range criticalRounds {
		delta := 0.0
		for k := range n {
			base(k, next[k])
			for j, s := range waitFor[k] {
				if s == 0 {
					continue
				}
				p := s / walls[k]
				for x, v := range r[j] {
					next[k][x] += p * v
				}
			}
			for x := range next[k] {
				delta = math.Max(delta, math.Abs(next[k][x]-r[k][x]))
			}
		}
		r, next = next, r
		if delta < 1e-9 {
			break
		}
	}
	return r
}

// criticalSeconds is the critical path's total time.
func criticalSeconds(ta *model.TimeAccounting) float64 {
	sum := 0.0
	for _, s := range ta.CriticalPath {
		sum += s
	}
	return sum
}

// endedBy says what ended the busy threads' waits of category cat, most
// time first, as "80% by kernel thread jbd2/vda1-8 219": at most n,
// each 5% of the waits or more; nil without a wait-for graph.
func endedBy(ta *model.TimeAccounting, cat string, n int) []string {
	if ta.Waits == nil {
		return nil
	}
	skip := map[int]bool{}
	for _, t := range ta.Threads {
		if t.Idle || t.Poller {
			skip[t.TID] = true
		}
	}
	by := map[string]float64{}
	peers := map[string]bool{}
	total := 0.0
	for _, w := range ta.Waits {
		if w.Category != cat || skip[w.TID] || w.Seconds <= 0 {
			continue
		}
		by[w.WakerWords()] += w.Seconds
		peers[w.WakerWords()] = w.Waker == model.WakerPeer
		total += w.Seconds
	}
	if total <= 0 {
		return nil
	}
	// Threads of the workload that each ended few of the waits (16
	// threads taking turns on a lock) read as one: "93% by 15 threads of
	// the workload, each under 10%".
	few, folded := 0, 0.0
	for k, sec := range by {
		if peers[k] && sec < 0.1*total {
			few++
			folded += sec
		}
	}
	if few > 1 {
		for k, sec := range by {
			if peers[k] && sec < 0.1*total {
				delete(by, k)
			}
		}
		by[fmt.Sprintf("%d threads of the workload, each under 10%%", few)] = folded
	}
	names := slices.Collect(maps.Keys(by))
	slices.SortFunc(names, func(a, b string) int {
		if by[a] != by[b] {
			return cmp.Compare(by[b], by[a])
		}
		return cmp.Compare(a, b)
	})
	var out []string
	for _, k := range names {
		if len(out) == n || by[k] < 0.05*total {
			break
		}
		out = append(out, fmt.Sprintf("%.0f%% by %s", by[k]/total*100, k))
	}
	return out
}
