//go:build amd64

package storage

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/probe/timeacct"
)

// BenchmarkFileCallCost measures what Config.Files adds to a 4 KiB
// buffered random pwrite, the (a) workload of the overhead benchmark:
// the run time per invocation of sys_enter and sys_exit (kernel BPF
// statistics, on for the benchmark only) and the rate of bare and
// observed pwrites, alternated, medians. Run with
// sudo go test -run '^$' -bench FileCallCost -benchtime 5x ./internal/probe/storage/
func BenchmarkFileCallCost(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("not root: the storage eBPF probe needs root")
	}
	if st, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME)); err == nil {
		defer st.Close()
	}
	f, err := os.Create(filepath.Join(b.TempDir(), "data"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	const size, calls = 64 << 20, 200000
	if err := f.Truncate(size); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 4096)
	rate := func() float64 {
		start := time.Now()
		for range calls {
			if _, err := unix.Pwrite(int(f.Fd()), buf, rand.Int64N(size/4096)*4096); err != nil {
				b.Fatal(err)
			}
		}
		return calls / time.Since(start).Seconds()
	}
	var bares, observeds []float64
	var enter, exit ebpf.ProgramStats
	for range b.N {
		bares = append(bares, rate())
		ta, err := timeacct.Start(timeacct.Config{Roots: []int{os.Getpid()}})
		if err != nil {
			b.Skipf("eBPF time accounting unavailable here: %v", err)
		}
		p, err := Start(Config{Files: true}, ta.SharedMaps())
		if err != nil {
			ta.Stop()
			b.Fatal(err)
		}
		observeds = append(observeds, rate())
		for _, x := range []struct {
			prog *ebpf.Program
			into *ebpf.ProgramStats
		}{{p.coll.Programs["sys_enter"], &enter}, {p.coll.Programs["sys_exit"], &exit}} {
			if st, err := x.prog.Stats(); err == nil {
				x.into.RunCount += st.RunCount
				x.into.Runtime += st.Runtime
			}
		}
		p.Stop()
		ta.Stop()
	}
	for _, x := range []struct {
		st   ebpf.ProgramStats
		name string
	}{{enter, "ns/sys_enter-run"}, {exit, "ns/sys_exit-run"}} {
		if x.st.RunCount > 0 {
			b.ReportMetric(float64(x.st.Runtime.Nanoseconds())/float64(x.st.RunCount), x.name)
		}
	}
	bare, observed := median(bares), median(observeds)
	b.ReportMetric(bare, "bare-pwrites/s")
	b.ReportMetric(observed, "observed-pwrites/s")
	b.ReportMetric(1-observed/bare, "slowdown")
}

func median(v []float64) float64 {
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}
