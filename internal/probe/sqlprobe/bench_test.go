//go:build amd64

package sqlprobe

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/probe/storage"
	"github.com/perfsleuth/perfsleuth/internal/probe/timeacct"
	"github.com/perfsleuth/perfsleuth/internal/workload/sqlite/capi"
)

// BenchmarkStatementCost measures what the statement probe adds to one
// execution of a statement that does no IO (SELECT of a bound value: one
// step, one reset, two uprobe hits): the loop is timed without the probe,
// then with it, alternately, and the difference per execution and per
// hit is reported.
//
//	sudo go test -run '^$' -bench StatementCost -benchtime 5x ./internal/probe/sqlprobe/
func BenchmarkStatementCost(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("not root")
	}
	conn, err := capi.Open(filepath.Join(b.TempDir(), "b.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	st, err := conn.Prepare("SELECT ?", capi.Int)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	const n = 200000
	loop := func() time.Duration {
		t0 := time.Now()
		for i := range n {
			if _, err := st.Exec([]int64{int64(i)}, nil); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(t0)
	}
	ta, err := timeacct.Start(timeacct.Config{Roots: []int{os.Getpid()}})
	if err != nil {
		b.Skipf("no eBPF time accounting: %v", err)
	}
	defer ta.Stop()
	sp, err := storage.Start(storage.Config{Files: true}, ta.SharedMaps())
	if err != nil {
		b.Fatal(err)
	}
	defer sp.Stop()
	var bare, probed time.Duration
	var hits uint64
	for range b.N {
		bare += loop()
		p, err := Start([]int{os.Getpid()}, ta.SharedMaps(), sp.SQLThreads())
		if err != nil {
			b.Fatal(err)
		}
		probed += loop()
		res, err := p.Stop()
		if err != nil {
			b.Fatal(err)
		}
		hits += res.Runs
	}
	execs := float64(n * b.N)
	added := float64(probed-bare) / execs
	b.ReportMetric(float64(bare)/execs, "bare-ns/exec")
	b.ReportMetric(float64(probed)/execs, "probed-ns/exec")
	b.ReportMetric(float64(hits)/execs, "hits/exec")
	b.ReportMetric(added/(float64(hits)/execs), "ns/hit")
}
