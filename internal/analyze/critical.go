package analyze

import (
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
// Per thread i, A_i is its own time per category (its waits for peers
// taken out) and P_ij the share of its wall time it waited for thread j.
// Its critical-path distribution, over (thread, category), solves
// D_i = A_i + sum_j P_ij D_j; it is found by iteration (criticalRounds),
// which converges when every cycle of waits leaks some own time, as any
// real thread does; what a cycle of pure waiting leaves unassigned stays
// in the categories of the waits. Without interval-level data a waiter is
// charged with the waited-for thread's whole-window distribution.
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
// from ta.Waits; nothing without them (procfs, older records) or with more
// busy threads than criticalMaxBusy.
func criticalPath(ta *model.TimeAccounting) {
	ta.CriticalPath = nil
	for i := range ta.Threads {
		ta.Threads[i].Poller, ta.Threads[i].CriticalSec = false, 0
	}
	if ta.Waits == nil {
		return
	}
	var busy []int // indexes into ta.Threads
	for i, t := range ta.Threads {
		if !t.Idle && t.WallSec > 0 {
			busy = append(busy, i)
		}
	}
	if len(busy) == 0 || len(busy) > criticalMaxBusy {
		return
	}
	// Waits are keyed by tid; the exited threads folded into their
	// process's entry (TID 0) are found by pid.
	byTID, folded := map[int]int{}, map[int]int{}
	for k, i := range busy {
		t := ta.Threads[i]
		if t.TID != 0 {
			byTID[t.TID] = k
		} else {
			folded[t.PID] = k
		}
	}
	find := func(tid, pid int) (int, bool) {
		if k, ok := byTID[tid]; ok {
			return k, true
		}
		k, ok := folded[pid]
		return k, ok
	}
	n := len(busy)
	cats := model.Categories
	catIdx := map[string]int{}
	for c, name := range cats {
		catIdx[name] = c
	}
	own := make([][]float64, n)     // own[i][c]: seconds
	waitFor := make([][]float64, n) // waitFor[i][j]: seconds i waited for j
	waitCat := make([][]float64, n) // waitCat[i][c]: of i's waits for peers, by category
	timerSleep := make([]float64, n)
	unended := make([]float64, n) // blocked, and not woken in the window
	waitedOn := make([]float64, n)
	for k, i := range busy {
		own[k] = make([]float64, len(cats))
		waitFor[k] = make([]float64, n)
		waitCat[k] = make([]float64, len(cats))
		for c, name := range cats {
			own[k][c] = ta.Threads[i].Seconds[name]
		}
	}
	for _, w := range ta.Waits {
		k, ok := find(w.TID, w.PID)
		if !ok {
			continue
		}
		c, ok := catIdx[w.Category]
		if !ok {
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
		j, ok := find(w.WakerTID, w.WakerPID)
		if !ok || j == k {
			continue
		}
		s := math.Min(w.Seconds, own[k][c])
		own[k][c] -= s
		waitFor[k][j] += s
		waitCat[k][c] += s
		waitedOn[j] += s
	}

	// D[i][j*C+c]: the share of i's wall time that is j doing c.
	C := len(cats)
	walls := make([]float64, n)
	for k, i := range busy {
		walls[k] = ta.Threads[i].WallSec
	}
	a := make([][]float64, n)
	d := make([][]float64, n)
	for k := range n {
		a[k] = make([]float64, n*C)
		for c := range C {
			a[k][k*C+c] = own[k][c] / walls[k]
		}
		d[k] = slices.Clone(a[k])
	}
	next := make([][]float64, n)
	for k := range n {
		next[k] = make([]float64, n*C)
	}
	for range criticalRounds {
		delta := 0.0
		for k := range n {
			copy(next[k], a[k])
			for j, s := range waitFor[k] {
				if s == 0 {
					continue
				}
				p := s / walls[k]
				for x, v := range d[j] {
					next[k][x] += p * v
				}
			}
			for x := range next[k] {
				delta = math.Max(delta, math.Abs(next[k][x]-d[k][x]))
			}
		}
		d, next = next, d
		if delta < 1e-9 {
			break
		}
	}
	// What a cycle of waiting left unassigned stays in the waits' own
	// categories.
	for k := range n {
		sum, waits := 0.0, 0.0
		for _, v := range d[k] {
			sum += v
		}
		for _, s := range waitCat[k] {
			waits += s
		}
		if rest := 1 - sum; rest > 1e-9 && waits > 0 {
			for c, s := range waitCat[k] {
				d[k][k*C+c] += rest * s / waits
			}
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
	for k, i := range busy {
		t := ta.Threads[i]
		off := t.WallSec - t.Seconds[model.CatCPU] - t.Seconds[model.CatCPUWait]
		apart := off >= pollerOffShare*t.WallSec && (timerSleep[k] >= pollerTimerShare*off || unended[k] >= pollerTimerShare*off)
		candidate[k] = apart && waitedOn[k] <= 0.1*t.WallSec && t.Seconds[model.CatCPU] <= pollerCPUShare*t.WallSec
		if candidate[k] {
			continue
		}
		share := 0.0
		for j := range n {
			for c, name := range cats {
				if active[name] {
					share += d[k][j*C+c]
				}
			}
		}
		if share >= workShare {
			worker = true
		}
	}
	poller := make([]bool, n)
	if worker {
		for k, i := range busy {
			if candidate[k] {
				poller[k] = true
				ta.Threads[i].Poller = true
			}
		}
	}
	ta.CriticalPath = map[string]float64{}
	carried := make([]float64, n)
	for k := range n {
		if poller[k] {
			continue
		}
		for j := range n {
			for c := range C {
				s := walls[k] * d[k][j*C+c]
				if s == 0 {
					continue
				}
				ta.CriticalPath[cats[c]] += s
				carried[j] += s
			}
		}
	}
	for k, i := range busy {
		ta.Threads[i].CriticalSec = carried[k]
	}
}

// criticalSeconds is the critical path's total time.
func criticalSeconds(ta *model.TimeAccounting) float64 {
	sum := 0.0
	for _, s := range ta.CriticalPath {
		sum += s
	}
	return sum
}
