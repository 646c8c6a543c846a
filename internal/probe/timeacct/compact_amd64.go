//go:build amd64

package timeacct

import (
	"errors"
	"fmt"
	"time"
)

// The wait-for graph's map (edges) has a key per thread and kind of wait,
// and a thread that exits leaves its keys behind: a workload that starts
// and ends threads by the thousand would fill it within minutes, and its
// later waits would be dropped. So while the probe runs, user space takes
// the edges of threads gone out of the map now and then, keeping their
// time under their process (TID 0, as the exit of a folded thread does in
// the kernel) in its folded map, where readEdges adds them, and the keys
// the kernel folded so for a process that is gone since. A peer waker
// gone too is kept as 0 (a thread of the workload since gone): naming it
// would keep a key per waker thread.

// compactEvery is how often the map's fill is checked; compactAbove the
// share of its entries past which the edges of threads gone are taken out.
// Variables for the tests.
var (
	compactEvery = 2 * time.Second
	compactAbove = 0.5
)

// edgeCompactor is the goroutine that compacts the edges map, and what it
// took out.
type edgeCompactor struct {
	stop, done chan struct{}
	// folded are the edges taken out, by the key they are kept under;
	// deleted counts the keys taken out (the map's entries are the
	// kernel's edge_inserts less these); runs the compactions; err the
	// first error one met.
	folded  map[timeacctTaEdgeKey]timeacctTaEdge
	procs   map[uint32]bool // the processes folded keeps apart
	deleted uint64
	runs    int
	err     error
}

// startCompactor starts the compaction of the edges map.
func (p *Probe) startCompactor() {
	c := &p.compactor
	c.stop, c.done = make(chan struct{}), make(chan struct{})
	c.folded = map[timeacctTaEdgeKey]timeacctTaEdge{}
	c.procs = map[uint32]bool{}
	go func() {
		defer close(c.done)
		tick := time.NewTicker(compactEvery)
		defer tick.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-tick.C:
				if err := p.maybeCompact(); err != nil && c.err == nil {
					c.err = err
				}
			}
		}
	}()
}

// stopCompactor stops it and waits for it; a second call does nothing.
func (p *Probe) stopCompactor() {
	c := &p.compactor
	if c.stop == nil {
		return
	}
	close(c.stop)
	<-c.done
	c.stop = nil
}

// maybeCompact compacts the edges map when it may hold more than
// compactAbove of its entries.
func (p *Probe) maybeCompact() error {
	var inserts uint64
	if err := p.objs.EdgeInserts.Get(&inserts); err != nil {
		return fmt.Errorf("variable edge_inserts: %w", err)
	}
	if float64(inserts-p.compactor.deleted) < compactAbove*float64(p.objs.Edges.MaxEntries()) {
		return nil
	}
	return p.compactEdges()
}

// compactEdges takes the edges of threads gone out of the map. The
// threads map is read after the edges: a thread whose edge the walk saw
// had its entry by then, so it is either still in threads or gone.
func (p *Probe) compactEdges() error {
	c := &p.compactor
	c.runs++
	var k timeacctTaEdgeKey
	var v timeacctTaEdge
	var keys []timeacctTaEdgeKey
	it := p.objs.Edges.Iterate()
	for it.Next(&k, &v) {
		keys = append(keys, k)
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("map edges: %w", err)
	}
	live := map[uint32]uint32{} // tid: generation (bpf: (u32)first_ns)
	for _, t := range p.threadEntries() {
		live[t.Tid] = uint32(t.FirstNs)
	}
	var errs []error
	for _, k := range keys {
		// A key whose waker is a thread of the workload gone is final:
		// nothing adds to it any more. Its waits are kept under the
		// waiter's process, the waker as 0 (a thread since gone).
		// Regression: the runtime threads of a process living the whole
		// run, woken by threads it starts by the thousand, made a key
		// per waker thread, and benchmarks/longrun dropped 3.3 million
		// waits in 20 minutes.
		_, wakerLive := live[k.Id]
		wakerGone := k.Kind == WakerPeer && k.Id != 0 && !wakerLive
		if k.Tid == 0 {
			// A folded thread's, kept by the kernel while its process
			// lives: once the process is gone (out of tracked), nothing
			// adds to it. Regression: a workload starting a process
			// every 100 ms filled the map with them in an hour, and
			// 10.4 million waits were dropped.
			if p.tracked == nil || p.tracked.Has(int(k.Tgid)) && !wakerGone {
				continue
			}
		} else if gen, ok := live[k.Tid]; ok && gen == k.Gen && !wakerGone {
			continue
		}
		// Gone: it adds nothing to this key any more, so the value read
		// is final.
		if err := p.objs.Edges.Lookup(&k, &v); err != nil {
			continue // taken out meanwhile
		}
		if err := p.objs.Edges.Delete(&k); err != nil {
			errs = append(errs, fmt.Errorf("map edges: delete: %w", err))
			break
		}
		c.deleted++
		fk := k
		fk.Tid, fk.Gen = 0, 0
		// Kept by process, for as many processes as exited_agg keeps
		// apart; the waits of those past it go to its catch-all's
		// (process 0), so that a workload starting processes without
		// end grows this map no more than the kernel's.
		if _, ok := c.procs[fk.Tgid]; !ok {
			if len(c.procs) < int(p.objs.ExitedAgg.MaxEntries())-1 {
				c.procs[fk.Tgid] = true
			} else {
				fk.Tgid = 0
			}
		}
		if k.Kind == WakerPeer && !wakerLive {
			fk.Id = 0
		}
		e := c.folded[fk]
		e.Ns += v.Ns
		e.Count += v.Count
		c.folded[fk] = e
	}
	return errors.Join(errs...)
}
