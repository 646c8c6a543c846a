//go:build amd64

package timeacct

import (
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

// TestChurnKeepsWaits: 6,000 threads and 15 processes come and go. Nothing
// is dropped; the compaction of the wait-for graph's map (made to run
// early) took out the edges of threads gone and kept every wait: the
// waits add up to the threads' time off CPU; the processes exited past
// what exited_agg keeps apart (made 3 entries here) are in its catch-all;
// and tracked holds no process once they are all gone and reaped.
func TestChurnKeepsWaits(t *testing.T) {
	needRoot(t)
	defer func(every time.Duration, above float64) { compactEvery, compactAbove = every, above }(compactEvery, compactAbove)
	compactEvery, compactAbove = 50*time.Millisecond, 0.001
	c := startChild(t, "churn")
	p, err := Start(Config{Roots: []int{c.cmd.Process.Pid}, aggEntries: 3})
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			t.Skipf("eBPF not permitted here: %v", err)
		}
		t.Fatalf("start: %v", err)
	}
	c.run(t)
	// The child is reaped: its tgid leaves tracked once its task is freed,
	// after an RCU grace period.
	for deadline := time.Now().Add(2 * time.Second); ; {
		n := len(p.tracked.Pids())
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("tracked still holds %d processes 2 s after they are all gone", n)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The processes are gone: a compaction takes their folded keys (tid
	// 0) out of the map too, and keeps at most aggEntries-1 processes
	// apart in user space. The compactor stopped first: its own
	// compaction, every 50 ms here, would write its maps at the same time
	// (a run at 5f2ed6b died of it, "concurrent map writes").
	p.stopCompactor()
	if err := p.compactEdges(); err != nil {
		t.Fatalf("compact: %v", err)
	}
	var k timeacctTaEdgeKey
	var v timeacctTaEdge
	for it := p.objs.Edges.Iterate(); it.Next(&k, &v); {
		if k.Tid == 0 {
			t.Errorf("the edges map still holds a key of process %d, gone: %+v", k.Tgid, k)
		}
	}
	procs := map[uint32]bool{}
	for fk := range p.compactor.folded {
		if fk.Tgid != 0 {
			procs[fk.Tgid] = true
		}
	}
	if len(procs) > 2 {
		t.Errorf("the folded waits keep %d processes apart, want at most 2 (exited_agg's 3 entries less its catch-all)", len(procs))
	}
	res, err := p.Stop()
	if err != nil {
		t.Fatalf("stop: %v", err)
	}
	checkSums(t, res)
	t.Logf("exits %d, threads listed %d, compactions %d, keys taken out %d; %s", res.Exits, len(res.Threads), p.compactor.runs, p.compactor.deleted, res.EdgeNote)
	if res.Exits < 6000 {
		t.Errorf("%d exits, want the 6,000 threads' and more", res.Exits)
	}
	if p.compactor.deleted == 0 || !strings.Contains(res.EdgeNote, "kept by process") {
		t.Errorf("the compaction took out %d keys (note %q): want the edges of the threads folded at their exit", p.compactor.deleted, res.EdgeNote)
	}
	// Past 4,096 threads each exiting one is folded: the child's into its
	// aggregate, and of the 4 processes run after that, the first into its
	// own and the others into the catch-all (3 entries: the catch-all,
	// the child, one more).
	var rest *Thread
	for i := range res.Threads {
		if th := &res.Threads[i]; th.PID == 0 {
			rest = th
		}
	}
	if rest == nil || rest.Folded < 1 || !res.FoldedProcesses || !strings.HasPrefix(rest.Comm, "processes past 2") {
		t.Errorf("the catch-all of exited processes: %+v (folded processes %v), want at least one process's thread in it", rest, res.FoldedProcesses)
	}
	var off, waits uint64
	for _, th := range res.Threads {
		for i, v := range th.Ns {
			if i != CatCPU {
				off += v
			}
		}
	}
	for _, e := range res.Edges {
		waits += e.Ns
	}
	if d := math.Abs(float64(waits) - float64(off)); d > 0.02*float64(off) {
		t.Errorf("the waits add up to %.1f ms, the threads' time off CPU to %.1f ms", float64(waits)/1e6, float64(off)/1e6)
	}
}
