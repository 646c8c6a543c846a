//go:build amd64

package timeacct

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// BenchmarkSwitchCost measures what the probe adds per context switch: a
// child bounces a byte between two threads pinned to one CPU through pipes,
// once bare and once observed, and the difference in time per round trip is
// divided by the switches the probe counted per round trip. It also reports
// the run time per invocation of the switch and waking programs (kernel
// BPF statistics, enabled for the benchmark only). Run with
// sudo go test -run '^$' -bench SwitchCost -benchtime 3x ./internal/probe/timeacct/
func BenchmarkSwitchCost(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("not root: the timeacct eBPF probe needs root")
	}
	// Bare and observed runs alternate and the medians are compared: the
	// machine is shared, and a mean follows its worst moments.
	if st, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME)); err == nil {
		defer st.Close()
	}
	var bares, observeds []float64
	var switches float64
	var runs [2]ebpf.ProgramStats
	for range b.N {
		bares = append(bares, pingPongRate(b, false, nil, nil))
		observeds = append(observeds, pingPongRate(b, true, &switches, &runs))
	}
	for i, name := range []string{"ns/switch-prog-run", "ns/waking-prog-run"} {
		if runs[i].RunCount > 0 {
			b.ReportMetric(float64(runs[i].Runtime.Nanoseconds())/float64(runs[i].RunCount), name)
		}
	}
	bare, observed := median(bares), median(observeds)
	perTrip := switches / float64(b.N) / pingPongRoundTrips
	b.ReportMetric(bare, "bare-trips/s")
	b.ReportMetric(observed, "observed-trips/s")
	b.ReportMetric(perTrip, "switches/trip")
	if perTrip > 0 {
		b.ReportMetric((1/observed-1/bare)*1e9/perTrip, "ns-added/switch")
	}
}

func median(v []float64) float64 {
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func pingPongRate(b *testing.B, probe bool, switches *float64, runs *[2]ebpf.ProgramStats) float64 {
	b.Helper()
	c := startChild(b, "pingpong")
	var p *Probe
	if probe {
		var err error
		if p, err = Start(Config{Roots: []int{c.cmd.Process.Pid}}); err != nil {
			b.Fatalf("start: %v", err)
		}
	}
	c.run(b)
	if p != nil {
		for i, prog := range []*ebpf.Program{p.objs.HandleSwitch, p.objs.HandleWaking} {
			if st, err := prog.Stats(); err == nil {
				runs[i].RunCount += st.RunCount
				runs[i].Runtime += st.Runtime
			}
		}
		res, err := p.Stop()
		if err != nil {
			b.Fatal(err)
		}
		for _, th := range res.Threads {
			*switches += float64(th.Switches)
		}
	}
	for _, l := range c.lines {
		if s, ok := strings.CutPrefix(l, "roundtrips/s "); ok {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				b.Fatal(err)
			}
			return v
		}
	}
	b.Fatalf("child printed no rate: %q", c.lines)
	return 0
}

// BenchmarkNamedCausesCost measures what naming the causes costs per
// event (issue 17), with the kernel's BPF statistics: the switch program's
// time per run on a ping-pong (no lock waits) and on the inode-lock child
// (16 threads writing one file: a lock wait at most switch-outs, each
// noting its file and, at most every 50 ms per thread, walking its stack),
// and the tick program's on a spinning child (one in TickStackHz ticks on
// it walks its user stack). Run with
// sudo go test -run '^$' -bench NamedCausesCost -benchtime 3x ./internal/probe/timeacct/
func BenchmarkNamedCausesCost(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("not root: the timeacct eBPF probe needs root")
	}
	if st, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME)); err == nil {
		defer st.Close()
	}
	for _, sc := range []string{"pingpong", "inodelock", "cpu"} {
		b.Run(sc, func(b *testing.B) {
			var sw, tick ebpf.ProgramStats
			var walks, lockWaits, ticks, switches uint64
			for range b.N {
				c := startChild(b, sc)
				p, err := Start(Config{Roots: []int{c.cmd.Process.Pid}})
				if err != nil {
					b.Fatalf("start: %v", err)
				}
				c.run(b)
				for prog, into := range map[*ebpf.Program]*ebpf.ProgramStats{p.objs.HandleSwitch: &sw, p.coll.Programs["ctx_hrtimer_entry"]: &tick} {
					if prog == nil {
						continue
					}
					if st, err := prog.Stats(); err == nil {
						into.RunCount += st.RunCount
						into.Runtime += st.Runtime
					}
				}
				res, err := p.Stop()
				if err != nil {
					b.Fatal(err)
				}
				walks += res.LockWalks
				ticks += res.TickStackRuns
				for _, l := range res.Locks {
					lockWaits += l.Count
				}
				for _, th := range res.Threads {
					switches += th.Switches
				}
			}
			n := float64(b.N)
			if sw.RunCount > 0 {
				b.ReportMetric(float64(sw.Runtime.Nanoseconds())/float64(sw.RunCount), "ns/switch-prog-run")
				b.ReportMetric(float64(sw.Runtime.Nanoseconds())/n, "switch-prog-ns/op")
			}
			if tick.RunCount > 0 {
				b.ReportMetric(float64(tick.Runtime.Nanoseconds())/float64(tick.RunCount), "ns/hrtimer-prog-run")
				b.ReportMetric(float64(tick.Runtime.Nanoseconds())/n, "hrtimer-prog-ns/op")
			}
			b.ReportMetric(float64(switches)/n, "switch-outs/op")
			b.ReportMetric(float64(lockWaits)/n, "lock-waits/op")
			b.ReportMetric(float64(walks)/n, "lock-walks/op")
			b.ReportMetric(float64(ticks)/n, "tick-walks/op")
		})
	}
}
