package sqlprobe

import (
	"math"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// TestJoin: statements of one text with different literals merge into one
// key; the IO of their ids is summed under it; what no statement was
// current for is the unattributed part of the share.
func TestJoin(t *testing.T) {
	hist := func(slot int, n uint64) []uint64 { h := make([]uint64, 40); h[slot] = n; return h }
	res := &Result{Runs: 9, Statements: []Statement{
		{ID: 1, PID: 7, Kind: "statement", Text: "INSERT INTO t VALUES ('a')", Execs: 1, Done: 1, Steps: 1, Sec: 0.001, Hist: hist(19, 1)},
		{ID: 2, PID: 7, Kind: "statement", Text: "INSERT INTO t VALUES ('bb')", Execs: 2, Done: 2, Steps: 2, Sec: 0.002, Hist: hist(19, 2)},
		{ID: 3, PID: 7, Kind: "checkpoint", Execs: 1, Steps: 1, Hist: hist(0, 0)},
		{ID: 4, PID: 8, Kind: "statement", Text: "INSERT INTO t VALUES ('a')", Execs: 1, Done: 1, Steps: 1, Sec: 0.001, Hist: hist(19, 1)},
	}}
	io := map[uint32]*model.SQLStmtIO{
		0: {Reads: 2, ReadBytes: 8192},
		1: {Writes: 3, Syncs: 1, WriteBytes: 12288, Pages: []model.SQLitePages{{Kind: "wal", Type: "frame-header", Writes: 3}}},
		2: {Writes: 5, Syncs: 1, WriteBytes: 20480, Pages: []model.SQLitePages{{Kind: "wal", Type: "frame-header", Writes: 5}}},
		3: {Writes: 10, Syncs: 2, WriteBytes: 40960},
	}
	q := Join(res, io, nil, 0)
	if len(q.Statements) != 3 {
		t.Fatalf("%d statements, want 3 (pid 7's INSERT, its checkpoint, pid 8's INSERT): %+v", len(q.Statements), q.Statements)
	}
	ins := q.Statements[0]
	if ins.PID != 7 || ins.Text != "INSERT INTO t VALUES (?)" || ins.Execs != 3 || ins.Writes != 8 || ins.Syncs != 2 ||
		len(ins.Pages) != 1 || ins.Pages[0].Writes != 8 {
		t.Errorf("the merged INSERT: %+v", ins)
	}
	// Slot 19 is [2^19, 2^20) ns: its middle, 0.79 ms.
	if math.Abs(ins.P50Sec-1.5*(1<<19)/1e9) > 1e-12 || ins.P99Sec != ins.P50Sec {
		t.Errorf("quantiles %g, %g", ins.P50Sec, ins.P99Sec)
	}
	calls, joined := 2.0+4+6+12, 4.0+6+12
	if math.Abs(q.AttributedShare-joined/calls) > 1e-9 || q.Unattributed.Reads != 2 {
		t.Errorf("attributed %.3f, want %.3f; unattributed %+v", q.AttributedShare, joined/calls, q.Unattributed)
	}
	if q.UprobeHits != 9 {
		t.Errorf("hits %d", q.UprobeHits)
	}
}
