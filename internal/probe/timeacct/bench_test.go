package timeacct

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// pingPongRoundTrips is the n of the pingpong scenario.
const pingPongRoundTrips = 50000

// BenchmarkSwitchCost measures what the probe adds per context switch: a
// child bounces a byte between two threads through pipes, once bare and
// once observed, and the difference in time per round trip is divided by
// the switches the probe counted per round trip. Run with
// sudo go test -run '^$' -bench SwitchCost -benchtime 3x ./internal/probe/timeacct/
func BenchmarkSwitchCost(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("not root: the timeacct eBPF probe needs root")
	}
	var bare, observed, switches float64
	for range b.N {
		bare += pingPongRate(b, false, nil)
		observed += pingPongRate(b, true, &switches)
	}
	n := float64(b.N)
	bare, observed = bare/n, observed/n
	perTrip := switches / n / pingPongRoundTrips
	b.ReportMetric(bare, "bare-trips/s")
	b.ReportMetric(observed, "observed-trips/s")
	b.ReportMetric(perTrip, "switches/trip")
	if perTrip > 0 {
		b.ReportMetric((1/observed-1/bare)*1e9/perTrip, "ns-added/switch")
	}
}

func pingPongRate(b *testing.B, probe bool, switches *float64) float64 {
	b.Helper()
	c := startChild(b, "pingpong")
	var p *Probe
	if probe {
		var err error
		if p, err = Start(Config{RootPID: c.cmd.Process.Pid}); err != nil {
			b.Fatalf("start: %v", err)
		}
	}
	c.run(b)
	if p != nil {
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
