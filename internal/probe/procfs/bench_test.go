package procfs

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"testing"
	"time"
)

// BenchmarkSnapshot measures one sample of a process with helperThreads
// threads: wall time per op and the sampling thread's CPU time per op
// (cpu-ns/op), which is what the sampler costs the machine each interval.
// The helper's threads are parked, as most of a thread pool's are.
func BenchmarkSnapshot(b *testing.B) { benchSnapshot(b, false) }

// BenchmarkSnapshotBusy is BenchmarkSnapshot with every thread read as if
// it had run since the last sample (schedstat too, and io with delay
// accounting on), which is what a sample costs when all threads are busy.
func BenchmarkSnapshotBusy(b *testing.B) { benchSnapshot(b, true) }

func benchSnapshot(b *testing.B, busy bool) {
	cmd := helperCmd("threads")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		b.Fatalf("helper: %q %v", line, err)
	}
	s := NewSampler(Config{RootPID: cmd.Process.Pid, IncludeRoot: true, Interval: time.Hour})
	if err := s.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer s.Stop()

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tree.final = busy // the final sample reads every thread in full
	_, use, _ := s.snapshot()
	c0 := threadCPU()
	for b.Loop() {
		if _, _, err := s.snapshot(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(threadCPU()-c0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(use.Threads), "threads")
	if n, err := os.ReadDir("/proc"); err == nil {
		b.ReportMetric(float64(len(n)), "proc-entries")
	}
}
