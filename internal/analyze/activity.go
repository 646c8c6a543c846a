package analyze

import (
	"maps"
	"slices"
	"sort"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// Time by activity and state. Each busy thread's wall time is split by
// what it was doing (the activity: user code, a page fault, or the class
// of syscall it was in: read, write, sync, aio, futex, poll, ...) and how
// (the state, model.States):
//
//	cpu             on a CPU (the thread's cpu time, split by activity in
//	                proportion to the on-CPU samples that fell on it)
//	cpu-wait        runnable, waiting for a CPU
//	storage-read,   blocked on storage, by the accounting's category
//	storage-write,
//	storage-sync
//	lock            blocked on a lock (futex, kernel locks)
//	peer            asleep (or in another wait) until a thread of the
//	                workload woke it: a pipe, a socket, a condition
//	                variable, a child
//	timer           asleep until a timer fired
//	other           asleep until anything else woke it (a process outside
//	                the workload, an interrupt, the network, a kernel
//	                thread), or not woken in the window
//
// The off-CPU cells come from the wait-for graph (model.Wait), the cpu
// cells from ThreadTime.CPUByActivity. Time whose activity is not known
// is kept under model.ActivityUnsampled, so that the cells always add up
// to the threads' time: a thread's cpu time when no sample fell on it or
// the record has none (made before samples were taken), and any of a
// category's time its waits do not cover. On ext4 a record without
// samples still knows the cpu time inside sync calls: the sync probe
// times it at each call's entry and exit (SyncCalls.Split), and it is
// put under "sync" (or "write" for O_SYNC writes) for the threads that
// made the calls.
//
// The verdict counts a thread's time on a CPU inside an IO call toward
// the storage the calls wait for (the key's group): 31% of the time on a
// CPU inside fdatasync is the sync's cost (the kernel's sync path), which
// is why fewer cores slowed the AndroBench case that looked sync-bound.
// Its time waiting for a CPU inside the call stays cpu-wait: the CPUs'
// contention, not the storage's.

// ioBlockedShare: an activity counts as IO for a thread, its CPU time in
// it going to the storage verdict, when the thread was blocked on storage
// for at least this share of its time in that activity. Calls served
// from memory do not wait on the device: a buffered write copies into the
// page cache on a CPU and returns (a stall in dirty-page throttling now
// and then aside), a read of cached data copies out of it; their CPU time
// is the CPU's work, and a verdict that named the device for it would
// send the user to the wrong resource. Calls that go to the device spend
// far more of their time blocked on it: 4 KiB O_DIRECT reads most of
// theirs, fio's libaio worker 38% of its time, SQLite's fdatasync calls
// 78% of theirs on a virtual disk (htmlreport's observe-storage record).
// 5% (one part in twenty) sits well below the second kind and above the
// first's occasional stall.
const ioBlockedShare = 0.05

// ioActivities are the activities whose calls move data to or from
// storage: their CPU time can be the IO's.
var ioActivities = map[string]bool{"sync": true, "read": true, "write": true, "aio": true}

// storageCats are the blocked-on-storage categories.
var storageCats = []string{model.CatStorageRead, model.CatStorageWrite, model.CatStorageSync}

// cellKey is one part of a thread's time: what it was doing (activity),
// the accounting category, the state shown (model.States) and the
// category the verdict counts it in (group: the category itself, or for
// cpu and cpu-wait inside IO calls, the storage the calls waited for).
type cellKey struct {
	activity, category, state, group string
}

// cells are the judged threads' time in cellKeys: the matrix before it
// is summed over threads, and the critical path's own-time vectors.
type cells struct {
	keys []cellKey
	idx  map[cellKey]int
	// busy are the judged threads (indexes into ta.Threads); own[k][x]
	// is busy[k]'s seconds in cell x.
	busy []int
	own  [][]float64
	// path is each cell's time on the critical path (criticalPath); nil
	// without one.
	path []float64
	// of finds the entry of ta.Threads a wait's thread is counted in.
	of func(pid, tid int) (int, bool)
	// pos maps an entry of ta.Threads to its k in busy.
	pos map[int]int
}

// thread finds the judged thread (k) a pid and tid are counted in.
func (c *cells) thread(pid, tid int) (int, bool) {
	i, ok := c.of(pid, tid)
	if !ok {
		return 0, false
	}
	k, ok := c.pos[i]
	return k, ok
}

func (c *cells) cell(key cellKey) int {
	x, ok := c.idx[key]
	if !ok {
		x = len(c.keys)
		c.idx[key] = x
		c.keys = append(c.keys, key)
	}
	return x
}

// threadIndex finds the entry of ta.Threads a thread's figures are in:
// its own, or its process's folded entry (TID 0) once it exited and was
// folded (as waitSums counts them).
func threadIndex(ta *model.TimeAccounting) func(pid, tid int) (int, bool) {
	type key struct{ pid, tid int }
	listed := map[key]int{}
	for i, t := range ta.Threads {
		listed[key{t.PID, t.TID}] = i
	}
	return func(pid, tid int) (int, bool) {
		if i, ok := listed[key{pid, tid}]; ok {
			return i, true
		}
		i, ok := listed[key{pid, 0}]
		return i, ok
	}
}

// stateOf is the state of a wait: its category, or for a sleep or other
// wait what ended it.
func stateOf(category, waker string) string {
	switch category {
	case model.CatCPUWait, model.CatStorageRead, model.CatStorageWrite, model.CatStorageSync, model.CatLock:
		return category
	}
	switch waker {
	case model.WakerPeer:
		return model.StatePeer
	case model.WakerTimer:
		return model.StateTimer
	}
	return model.StateOther
}

// timeCells splits the judged (non-idle) threads' time into cells; nil
// without a wait-for graph (procfs, older records), which has no
// activities to split it by.
func timeCells(ta *model.TimeAccounting, st *model.StorageIO) *cells {
	if ta.Waits == nil {
		return nil
	}
	c := &cells{idx: map[cellKey]int{}, of: threadIndex(ta), pos: map[int]int{}}
	for i, t := range ta.Threads {
		if !t.Idle && t.WallSec > 0 {
			c.pos[i] = len(c.busy)
			c.busy = append(c.busy, i)
		}
	}
	n := len(c.busy)
	// Before groups: each thread's seconds by (activity, category, state).
	raw := make([]map[cellKey]float64, n)
	waited := make([]map[string]float64, n)
	for k := range n {
		raw[k], waited[k] = map[cellKey]float64{}, map[string]float64{}
	}
	for _, w := range ta.Waits {
		k, ok := c.thread(w.PID, w.TID)
		if !ok || w.Seconds <= 0 || w.Category == model.CatCPU {
			continue
		}
		raw[k][cellKey{w.Activity, w.Category, stateOf(w.Category, w.Waker), ""}] += w.Seconds
		waited[k][w.Category] += w.Seconds
	}
	for k, i := range c.busy {
		t := ta.Threads[i]
		// The thread's accounting is the reference, its waits split it:
		// they agree to rounding (perfsleuth.inconsistent says when
		// not), and a category they do not cover stays, unsplit.
		for key, s := range raw[k] {
			if want := t.Seconds[key.category]; waited[k][key.category] > 0 {
				raw[k][key] = s * want / waited[k][key.category]
			}
		}
		for _, cat := range slices.Sorted(maps.Keys(t.Seconds)) {
			if s := t.Seconds[cat]; cat != model.CatCPU && s > 0 && waited[k][cat] == 0 {
				raw[k][cellKey{model.ActivityUnsampled, cat, stateOf(cat, model.WakerNone), ""}] += s
			}
		}
		cpu := t.Seconds[model.CatCPU]
		sampled := 0.0
		for _, s := range t.CPUByActivity {
			sampled += s
		}
		scale := 1.0
		if sampled > cpu {
			scale = cpu / sampled
		}
		for a, s := range t.CPUByActivity {
			raw[k][cellKey{a, model.CatCPU, model.StateCPU, ""}] += s * scale
		}
		if rest := cpu - sampled*scale; rest > 1e-12 {
			raw[k][cellKey{model.ActivityUnsampled, model.CatCPU, model.StateCPU, ""}] += rest
		}
	}
	syncCPU(ta, c, raw)
	reqRead, reqWrite := blockRequests(st)
	c.own = make([][]float64, n)
	for k := range n {
		// Each IO activity's share of the thread's time blocked on
		// storage, by category.
		actSec := map[string]float64{}
		blocked := map[string]map[string]float64{}
		for key, s := range raw[k] {
			actSec[key.activity] += s
			if slices.Contains(storageCats, key.category) {
				if blocked[key.activity] == nil {
					blocked[key.activity] = map[string]float64{}
				}
				blocked[key.activity][key.category] += s
			}
		}
		split := map[string]map[string]float64{}
		for a := range actSec {
			if !ioActivities[a] {
				continue
			}
			b := 0.0
			for _, s := range blocked[a] {
				b += s
			}
			switch {
			case b > 0 && b >= ioBlockedShare*actSec[a]:
				split[a] = map[string]float64{}
				for cat, s := range blocked[a] {
					split[a][cat] = s / b
				}
			case a == "aio" && reqRead+reqWrite > 0:
				// A submitter that reaps completions without sleeping
				// (polling io_uring, io_getevents finding them done)
				// moves storage data all the same: the device's reads
				// and writes for the workload say which.
				split[a] = map[string]float64{model.CatStorageRead: reqRead / (reqRead + reqWrite), model.CatStorageWrite: reqWrite / (reqRead + reqWrite)}
			}
		}
		// A fixed order of the keys: the cells' order decides the sums'
		// last bits.
		keys := slices.SortedFunc(maps.Keys(raw[k]), compareKeys)
		for _, key := range keys {
			s := raw[k][key]
			if s == 0 {
				continue
			}
			sp := split[key.activity]
			// Only the time on a CPU moves: waiting for a CPU inside
			// a call, the thread is runnable, the device done with it,
			// and what it waits for is a CPU (less load or more cores
			// shorten it, faster storage does not). Regression:
			// pgbench and PostgreSQL beside two CPU burners read
			// "sync-bound: 43% inside sync calls: 4% blocked on the
			// device, 4% on a CPU, 35% waiting for a CPU".
			if sp == nil || key.category != model.CatCPU {
				key.group = key.category
				c.add(k, key, s)
				continue
			}
			for _, g := range storageCats {
				if f := sp[g]; f > 0 {
					key.group = g
					c.add(k, key, s*f)
				}
			}
		}
	}
	return c
}

func (c *cells) add(k int, key cellKey, s float64) {
	x := c.cell(key)
	for len(c.own[k]) <= x {
		c.own[k] = append(c.own[k], 0)
	}
	c.own[k][x] += s
}

// vector is thread k's own time over every cell (own rows are built as
// cells appear, so earlier rows are shorter).
func (c *cells) vector(k int) []float64 {
	v := make([]float64, len(c.keys))
	copy(v, c.own[k])
	return v
}

func compareKeys(a, b cellKey) int {
	for _, p := range [][2]string{{a.activity, b.activity}, {a.category, b.category}, {a.state, b.state}, {a.group, b.group}} {
		if p[0] != p[1] {
			if p[0] < p[1] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// syncCPU puts the cpu time inside sync calls, as the sync probe timed it
// (SyncCalls.Split: ext4), under "sync" (O_SYNC writes: "write") for the
// threads no on-CPU sample split: shared among them in proportion to
// their time blocked in storage-sync in those calls, at most each one's
// unsplit cpu time.
func syncCPU(ta *model.TimeAccounting, c *cells, raw []map[cellKey]float64) {
	byAct := map[string]float64{}
	for _, s := range ta.Syncs {
		a := "sync"
		if s.Kind == "write" {
			a = "write"
		}
		byAct[a] += s.Split[model.CatCPU]
	}
	unsplit := cellKey{model.ActivityUnsampled, model.CatCPU, model.StateCPU, ""}
	for _, a := range slices.Sorted(maps.Keys(byAct)) {
		cpu := byAct[a]
		if cpu <= 0 {
			continue
		}
		weight := make([]float64, len(c.busy))
		sum := 0.0
		for k, i := range c.busy {
			if ta.Threads[i].CPUByActivity != nil {
				continue
			}
			// A sync call's waits are storage-sync, or storage-write
			// while it waits for pages under writeback; an O_SYNC
			// write's are storage-sync, where a buffered write's
			// (dirty-page throttling) are storage-write.
			cats := storageCats
			if a == "write" {
				cats = []string{model.CatStorageSync}
			}
			for _, cat := range cats {
				weight[k] += raw[k][cellKey{a, cat, cat, ""}]
			}
			sum += weight[k]
		}
		if sum <= 0 {
			continue
		}
		for k := range c.busy {
			s := min(cpu*weight[k]/sum, raw[k][unsplit])
			if s <= 0 {
				continue
			}
			raw[k][unsplit] -= s
			if raw[k][unsplit] <= 1e-12 {
				delete(raw[k], unsplit)
			}
			raw[k][cellKey{a, model.CatCPU, model.StateCPU, ""}] += s
		}
	}
}

// blockRequests are the workload's read and write requests to block
// devices (its own; writeback of its pages counts as writes).
func blockRequests(st *model.StorageIO) (reads, writes float64) {
	if st == nil {
		return 0, 0
	}
	for _, d := range st.Devices {
		for _, o := range d.Ops {
			switch o.Op {
			case "read":
				reads += float64(o.WorkloadRequests)
			case "write":
				writes += float64(o.WorkloadRequests + o.WritebackRequests)
			}
		}
	}
	return reads, writes
}

// fillMatrix sums the cells over the judged threads into ta.Matrix, by
// activity and state, with each cell's time on the critical path:
// activities with the most time first, states in model order.
func fillMatrix(ta *model.TimeAccounting, c *cells) {
	ta.Matrix = nil
	if c == nil {
		return
	}
	type as struct{ activity, state string }
	sec, crit := map[as]float64{}, map[as]float64{}
	actSec := map[string]float64{}
	for k := range c.busy {
		for x, s := range c.own[k] {
			key := as{c.keys[x].activity, c.keys[x].state}
			sec[key] += s
			actSec[key.activity] += s
		}
	}
	for x, s := range c.path {
		crit[as{c.keys[x].activity, c.keys[x].state}] += s
	}
	acts := slices.Collect(maps.Keys(actSec))
	sort.Slice(acts, func(i, j int) bool {
		if actSec[acts[i]] != actSec[acts[j]] {
			return actSec[acts[i]] > actSec[acts[j]]
		}
		return acts[i] < acts[j]
	})
	ta.Matrix = []model.ActivityTime{}
	for _, a := range acts {
		for _, st := range model.States {
			key := as{a, st}
			if sec[key] > 0 || crit[key] > 0 {
				ta.Matrix = append(ta.Matrix, model.ActivityTime{Activity: a, State: st, Seconds: sec[key], CriticalSec: crit[key]})
			}
		}
	}
}
