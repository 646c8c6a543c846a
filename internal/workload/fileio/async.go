package fileio

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/workload"
)

// asyncSlot is one request a thread may have in flight.
type asyncSlot struct {
	write     bool
	file      int
	off       int64
	buf       []byte
	queued    time.Duration // prepared (from worker.base)
	submitted time.Duration // its submit call returned
}

// asyncState is a thread's part of an asynchronous engine: the engine, its
// slots and the timings fio reports for such engines: submission latency
// (slat: from a request's preparation to its submit call's return) and
// completion latency (clat: from then to its completion being reaped);
// the op's own latency histogram is their sum (fio's lat).
type asyncState struct {
	eng          asyncEngine
	depth, batch int
	slots        []asyncSlot
	free         []int
	done         []completion
	queued       []int // slots prepared, not yet taken by a submit
	inflight     int   // submitted, not yet reaped
	slat, clat   [2]*workload.Recorder
	depthSamples []int64 // at each submit, the requests in flight after it (fio's "IO depths")
	rbufs, wbufs [][]byte
}

// newAsync opens thread w's engine and its buffers: a read and a write
// buffer per slot, since a slot's buffer is the kernel's until it
// completes.
func (w *worker) newAsync(engine string, depth, batch int) error {
	eng, err := newEngine(engine, depth)
	if err != nil {
		return err
	}
	a := &asyncState{eng: eng, depth: depth, batch: batch, slots: make([]asyncSlot, depth), done: make([]completion, depth),
		depthSamples: make([]int64, depth+1)}
	for i := range 2 {
		a.slat[i], a.clat[i] = workload.NewRecorder(), workload.NewRecorder()
	}
	w.async = a
	for i := depth - 1; i >= 0; i-- {
		a.free = append(a.free, i)
	}
	for range depth {
		rb, err := w.mmap(int(w.bs))
		if err != nil {
			return err
		}
		wb, err := w.mmap(int(w.bs))
		if err != nil {
			return err
		}
		clear(rb)
		copy(wb, w.wbuf) // the thread's pseudo-random data
		a.rbufs, a.wbufs = append(a.rbufs, rb), append(a.wbufs, wb)
	}
	return nil
}

// asyncLoop is loop for an asynchronous engine: it keeps up to depth
// requests in flight, submitting them batch at a time (or as many as are
// ready when no more can be prepared), and reaps at least one completion
// whenever it can prepare no more. On stop it submits nothing more and
// waits for what is in flight. A sync (--fsync N) first waits for every
// request in flight, then syncs synchronously, as fio does for engines
// without asynchronous syncs.
func (w *worker) asyncLoop() {
	a := w.async
	if err := a.eng.start(); err != nil {
		w.fail(err)
		return
	}
	for {
		more := !w.stop.Load() && w.opsLeft != 0
		for more && len(a.free) > 0 {
			if w.prepNext() {
				// A write that makes a sync due: everything before it
				// completes first, then the sync.
				if !w.submitQueued() || !w.drain() {
					return
				}
			}
			more = !w.stop.Load() && w.opsLeft != 0
			if len(a.queued) >= a.batch {
				if !w.submitQueued() {
					return
				}
			}
		}
		if len(a.queued) > 0 && !w.submitQueued() {
			return
		}
		if a.inflight == 0 && len(a.queued) == 0 {
			if !more {
				return
			}
			continue
		}
		if !w.reapSome(1) {
			return
		}
	}
}

// prepNext prepares the next op in a free slot; it reports whether a sync
// of the op's file became due with it (--fsync N).
func (w *worker) prepNext() bool {
	a := w.async
	w.opsLeft--
	fi, off := w.nextOffset()
	read := w.read
	if w.mixed {
		read = w.uint64n(100) < w.mix
	}
	slot := a.free[len(a.free)-1]
	a.free = a.free[:len(a.free)-1]
	s := &a.slots[slot]
	s.write, s.file, s.off = !read, fi, off
	if read {
		s.buf = a.rbufs[slot]
	} else {
		s.buf = a.wbufs[slot]
		w.stamp(s.buf, fi, off, w.writesIssued)
		w.writesIssued++
		w.written[fi] = true
	}
	s.queued = time.Since(w.base)
	a.eng.prep(slot, s.write, w.fds[fi], s.buf, off)
	a.queued = append(a.queued, slot)
	if s.write && w.fsyncEvery > 0 {
		if w.sinceSync[fi]++; w.sinceSync[fi] == w.fsyncEvery {
			w.sinceSync[fi] = 0
			w.syncDue = append(w.syncDue, fi)
			return true
		}
	}
	return false
}

// submitQueued submits what is queued; when the kernel takes none (its
// queue is full) it reaps first. False when the run failed.
func (w *worker) submitQueued() bool {
	a := w.async
	for len(a.queued) > 0 {
		n, err := a.eng.submit()
		if err != nil {
			w.fail(err)
			return false
		}
		now := time.Since(w.base)
		for _, slot := range a.queued[:n] {
			a.slots[slot].submitted = now
		}
		a.queued = a.queued[:copy(a.queued, a.queued[n:])]
		a.inflight += n
		if n > 0 {
			a.depthSamples[min(a.inflight, a.depth)]++
			continue
		}
		if a.inflight == 0 {
			w.fail(fmt.Errorf("%s took none of %d requests with none in flight", w.engine, len(a.queued)))
			return false
		}
		if !w.reapSome(1) {
			return false
		}
	}
	return true
}

// drain waits for every request in flight, then makes the syncs that
// became due.
func (w *worker) drain() bool {
	for w.async.inflight > 0 {
		if !w.reapSome(w.async.inflight) {
			return false
		}
	}
	for _, fi := range w.syncDue {
		if !w.sync(fi) {
			return false
		}
	}
	w.syncDue = w.syncDue[:0]
	return true
}

// reapSome waits for at least least completions and accounts them.
func (w *worker) reapSome(least int) bool {
	a := w.async
	n, err := a.eng.reap(least, a.done)
	if err != nil {
		w.fail(err)
		return false
	}
	now := time.Since(w.base)
	w.yield(now)
	for _, c := range a.done[:n] {
		s := &a.slots[c.slot]
		a.inflight--
		a.free = append(a.free, c.slot)
		call := w.engine + " read"
		if s.write {
			call = w.engine + " write"
		}
		if c.res < 0 {
			w.ioFailed(call, s.file, s.off, 0, unix.Errno(-c.res))
			return false
		}
		if int(c.res) != len(s.buf) {
			w.ioFailed(call, s.file, s.off, int(c.res), nil)
			return false
		}
		k := 0
		if s.write {
			k = 1
		}
		a.slat[k].Record(int64(s.submitted - s.queued))
		a.clat[k].Record(int64(now - s.submitted))
		if s.write {
			w.wrec.Record(int64(now - s.queued))
			w.writes++
		} else {
			w.rrec.Record(int64(now - s.queued))
			w.reads++
		}
	}
	w.done.Store(w.reads + w.writes)
	return true
}
