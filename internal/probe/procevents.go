package probe

import (
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
)

// SharedProcEvents names, among a session's shared maps, the time
// accounting's ring buffer of the workload's processes that start or
// exec (a tgid a record): the mappings keeper reads their maps then,
// instead of looking for them five times a second.
const SharedProcEvents = "proc_events"

// procWatch signals on C when the ring buffer it reads has records.
type procWatch struct {
	m  *ebpf.Map // a clone of the lender's, kept open while the reader is
	rd *ringbuf.Reader
	C  chan struct{}
	wg sync.WaitGroup
}

// watchProcs starts reading m, a SharedProcEvents ring buffer.
func watchProcs(m *ebpf.Map) (*procWatch, error) {
	clone, err := m.Clone()
	if err != nil {
		return nil, err
	}
	rd, err := ringbuf.NewReader(clone)
	if err != nil {
		clone.Close()
		return nil, err
	}
	w := &procWatch{m: clone, rd: rd, C: make(chan struct{}, 1)}
	w.wg.Go(func() {
		var rec ringbuf.Record
		for {
			// Closed, or failing: the keeper's own schedule goes on.
			if err := rd.ReadInto(&rec); err != nil {
				return
			}
			select {
			case w.C <- struct{}{}:
			default:
			}
		}
	})
	return w, nil
}

// Close stops the reader. Safe on nil.
func (w *procWatch) Close() {
	if w == nil {
		return
	}
	w.rd.Close()
	w.wg.Wait()
	w.m.Close()
}
