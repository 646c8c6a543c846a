// Command longrun observes a churning workload for a long time and prints
// perfsleuth's memory over time (issue 21): `observe -p PID --duration D`
// of a process that starts and ends threads, processes and files all the
// while, with perfsleuth's resident memory (VmRSS, and its peak VmHWM)
// and the memory its BPF maps hold (memlock, from /proc/PID/fdinfo)
// sampled every --every. At the end it prints what the run record says it
// dropped, and whether the peak stayed under --bound.
//
// Run as root for the eBPF probes (otherwise this measures /proc sampling).
//
//	go run ./benchmarks/longrun [--duration 1h] [--every 1m] [--bound 256MiB]
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/perfsleuth/perfsleuth/benchmarks/internal/atexit"
	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "__churn" {
		churn(os.Args[2])
		return
	}
	duration := flag.Duration("duration", time.Hour, "how long to observe")
	every := flag.Duration("every", time.Minute, "how often to sample perfsleuth's memory")
	boundFlag := flag.String("bound", "256MiB", "the most resident memory (VmHWM) perfsleuth may reach")
	bin := flag.String("perfsleuth", "", "perfsleuth binary (default: build ./cmd/perfsleuth)")
	agentMode := flag.Bool("agent", false, "run perfsleuth agent -p on the workload instead of observe -p (issue 23: the agent's memory over a long run)")
	window := flag.Duration("window", 30*time.Second, "the agent's window (--agent)")
	flag.Parse()
	bound, err := units.ParseSize(*boundFlag)
	check(err)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tmp, err := os.MkdirTemp(".", "perfsleuth-longrun-")
	check(err)
	atexit.Add(func() { os.RemoveAll(tmp) })
	defer atexit.Run()
	tmp, _ = filepath.Abs(tmp)
	if *bin == "" {
		*bin = filepath.Join(tmp, "perfsleuth")
		out, err := exec.Command("go", "build", "-o", *bin, "./cmd/perfsleuth").CombinedOutput()
		if err != nil {
			fail("build perfsleuth: %v\n%s", err, out)
		}
	}
	self, err := os.Executable()
	check(err)
	work := exec.Command(self, "__churn", filepath.Join(tmp, "files"))
	work.Stderr = os.Stderr
	check(work.Start())
	atexit.Add(func() { work.Process.Kill(); work.Wait() })

	rec := filepath.Join(tmp, "run.json")
	obs := exec.Command(*bin, "observe", "-p", strconv.Itoa(work.Process.Pid), "--duration", duration.String(), "--json", rec)
	var metricsURL string
	if *agentMode {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		check(err)
		addr := ln.Addr().String()
		ln.Close()
		metricsURL = "http://" + addr + "/metrics"
		obs = exec.Command(*bin, "agent", "-p", strconv.Itoa(work.Process.Pid), "--window", window.String(), "--listen", addr)
	}
	var stderr strings.Builder
	obs.Stdout, obs.Stderr = &stderr, &stderr
	check(obs.Start())
	atexit.Add(func() { obs.Process.Kill() }) // a no-op once it has ended
	if *agentMode {
		// The agent runs until told: ended after the duration.
		go func() {
			select {
			case <-time.After(*duration):
			case <-ctx.Done():
			}
			obs.Process.Signal(os.Interrupt)
		}()
	}
	done := make(chan error, 1)
	go func() { done <- obs.Wait() }()

	what := "observe -p"
	if *agentMode {
		what = "agent --window " + window.String() + " -p"
	}
	fmt.Printf("%s %d (threads, processes and files starting and ending) for %s, sampled every %s\n\n", what, work.Process.Pid, duration, every)
	fmt.Printf("%10s %12s %12s %14s\n", "elapsed", "rss MiB", "peak MiB", "bpf maps MiB")
	start := time.Now()
	var peak int64
	sample := func() {
		rss, hwm := status(obs.Process.Pid)
		peak = max(peak, hwm)
		fmt.Printf("%10s %12.1f %12.1f %14.1f\n", time.Since(start).Round(time.Second), mib(rss), mib(hwm), mib(mapMemory(obs.Process.Pid)))
		if metricsURL != "" {
			lastScrape = agentFigures(metricsURL)
		}
	}
	tick := time.NewTicker(*every)
	defer tick.Stop()
	var runErr error
loop:
	for {
		select {
		case <-tick.C:
			sample()
		case runErr = <-done:
			break loop
		case <-ctx.Done():
			obs.Process.Signal(os.Interrupt)
			runErr = <-done
			break loop
		}
	}
	fmt.Println()
	if *agentMode {
		// Read before the agent ends, by sample (): here it has ended; its
		// last scrape is the one the sampler kept.
		fmt.Print(lastScrape)
		if !strings.Contains(lastScrape, "windows") {
			fail("the agent served no windows: %v\n%s", runErr, stderr.String())
		}
		verdict := "PASS"
		if peak > bound {
			verdict = "FAIL"
		}
		fmt.Printf("peak resident memory %.1f MiB, bound %s: %s\n", mib(peak), *boundFlag, verdict)
		if verdict != "PASS" {
			atexit.Exit(1)
		}
		return
	}
	if runErr != nil {
		fail("perfsleuth: %v\n%s", runErr, stderr.String())
	}
	r, err := model.Load(rec)
	check(err)
	if ta := r.TimeAccounting; ta != nil {
		fmt.Printf("time accounting: %d threads, dropped %d %v, missed runs %v, on-CPU samples dropped %d\n", len(ta.Threads), ta.Dropped, ta.DroppedBy, ta.MissedRuns, ta.OnCPUDropped)
	}
	if s := r.Storage; s != nil {
		fmt.Printf("storage: dropped %+v\n", s.Dropped)
	}
	verdict := "PASS"
	if peak > bound {
		verdict = "FAIL"
	}
	fmt.Printf("peak resident memory %.1f MiB, bound %s: %s\n", mib(peak), *boundFlag, verdict)
	if verdict != "PASS" {
		atexit.Exit(1)
	}
}

// lastScrape is the agent's own figures at the last sample (--agent).
var lastScrape string

// agentFigures reads the agent's own figures from its /metrics.
func agentFigures(url string) string {
	resp, err := http.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		for _, name := range []string{"perfsleuth_agent_cpu_seconds_total", "perfsleuth_agent_probe_cpu_seconds_total", "perfsleuth_agent_resident_memory_bytes",
			"perfsleuth_agent_series", "perfsleuth_agent_windows_total", "perfsleuth_agent_observed_seconds_total", "perfsleuth_agent_window_errors_total", "perfsleuth_agent_probe_dropped_events_total"} {
			if strings.HasPrefix(l, name+" ") || strings.HasPrefix(l, name+"{") {
				b.WriteString("  " + l + "\n")
			}
		}
	}
	return b.String()
}

// churn is the workload: threads that start and end (each goroutine
// locked to its thread and ending with it), a process started every
// 100 ms, and files made, written, synced now and then and removed, in
// dir, without end.
func churn(dir string) {
	check(os.MkdirAll(dir, 0o755))
	go func() {
		for {
			exec.Command("true").Run()
			time.Sleep(100 * time.Millisecond)
		}
	}()
	go func() {
		buf := make([]byte, 4096)
		for i := 0; ; i++ {
			p := filepath.Join(dir, fmt.Sprintf("f%d", i%1000))
			if f, err := os.Create(p); err == nil {
				f.Write(buf)
				if i%50 == 0 {
					f.Sync()
				}
				f.Close()
			}
			if i%1000 == 999 {
				for j := range 1000 {
					os.Remove(filepath.Join(dir, fmt.Sprintf("f%d", j)))
				}
			}
			time.Sleep(time.Millisecond)
		}
	}()
	for {
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
				time.Sleep(5 * time.Millisecond)
			})
		}
		wg.Wait()
		time.Sleep(20 * time.Millisecond)
	}
}

// status returns VmRSS and VmHWM of pid, in bytes.
func status(pid int) (rss, hwm int64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			rss = kb << 10
		case "VmHWM":
			hwm = kb << 10
		}
	}
	return rss, hwm
}

// mapMemory sums the memlock of the BPF maps pid holds open.
func mapMemory(pid int) int64 {
	dir := fmt.Sprintf("/proc/%d/fdinfo", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var sum int64
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil || !strings.Contains(string(b), "map_type:") {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "memlock:"); ok {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				sum += n
			}
		}
	}
	return sum
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func check(err error) {
	if err != nil {
		fail("%v", err)
	}
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "longrun: "+format+"\n", a...)
	atexit.Exit(1)
}
