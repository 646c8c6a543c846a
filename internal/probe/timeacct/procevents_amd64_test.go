//go:build amd64

package timeacct

import (
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf/ringbuf"
)

// TestProcEvents: the processes a tracked process starts are in the ring
// buffer the mappings keeper follows, at their fork and at their exec.
func TestProcEvents(t *testing.T) {
	needRoot(t)
	c := startChild(t, "execs")
	p, err := Start(Config{Roots: []int{c.cmd.Process.Pid}})
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			t.Skipf("eBPF not permitted here: %v", err)
		}
		t.Fatalf("start: %v", err)
	}
	defer p.Stop()
	m := p.ProcEvents()
	if m == nil {
		t.Skip("sched_process_exec did not attach here: the keeper polls")
	}
	rd, err := ringbuf.NewReader(m)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	c.run(t)
	var children []int
	for _, l := range c.lines {
		if s, ok := strings.CutPrefix(l, "child "); ok {
			pid, err := strconv.Atoi(s)
			if err != nil {
				t.Fatalf("child printed %q", l)
			}
			children = append(children, pid)
		}
	}
	if len(children) != 3 {
		t.Fatalf("the child printed %d pids, want 3: %q", len(children), c.lines)
	}
	seen := map[int]int{}
	rd.SetDeadline(time.Now().Add(time.Second))
	for {
		rec, err := rd.Read()
		if err != nil {
			break
		}
		if len(rec.RawSample) >= 4 {
			seen[int(uint32(rec.RawSample[0])|uint32(rec.RawSample[1])<<8|uint32(rec.RawSample[2])<<16|uint32(rec.RawSample[3])<<24)]++
		}
	}
	t.Logf("events by tgid: %v; children %v", seen, children)
	for _, pid := range children {
		// One at the fork, one at the exec.
		if seen[pid] != 2 {
			t.Errorf("process %d: %d events, want 2 (its fork and its exec)", pid, seen[pid])
		}
	}
	// Others are forks that did not exec: Go's syscall package starts one
	// to learn whether clone takes CLONE_PIDFD, at the child's first exec.
	for pid, n := range seen {
		if !slices.Contains(children, pid) && n != 1 {
			t.Errorf("%d events for process %d, which the child did not start with exec: want its fork alone", n, pid)
		}
	}
}
