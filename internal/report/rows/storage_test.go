package rows

import (
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

func TestStorageLost(t *testing.T) {
	if got := StorageLost(model.StorageDropped{Unseen: 3}); len(got) != 0 {
		t.Errorf("nothing lost: got %q", got)
	}
	got := StorageLost(model.StorageDropped{Requests: 2, MissedRuns: map[string]int64{"block_rq_complete": 39, "block_rq_issue": 1}})
	if len(got) != 2 {
		t.Fatalf("got %q, want two warnings", got)
	}
	if !strings.Contains(got[0], "2 requests") {
		t.Errorf("first warning %q does not count the lost requests", got[0])
	}
	if !strings.Contains(got[1], "block_rq_complete 39, block_rq_issue 1") {
		t.Errorf("second warning %q does not list the missed runs by program, sorted", got[1])
	}
}

func TestTopFiles(t *testing.T) {
	if got := TopFiles([]model.FileIO{{Path: "/a"}}, 3); got != nil {
		t.Errorf("one file: got %q, want no lines", got)
	}
	fs := []model.FileIO{
		{Path: "/d/db", BlockedSec: 0.5, Reads: model.FileOps{Count: 10, Bytes: 40960}, Writes: model.FileOps{Count: 5, Bytes: 20480}},
		{Path: "/d/db-wal", BlockedSec: 0.1, Writes: model.FileOps{Count: 1000, Bytes: 4 << 20}, Syncs: 3},
		{Path: "/d/log", BlockedSec: 0, Writes: model.FileOps{Count: 20, Bytes: 100}},
	}
	got := TopFiles(fs, 2)
	want := []string{
		"most blocked on storage: db 500ms, db-wal 100ms",
		"most bytes: db-wal 4 MiB, db 60 KiB",
		"most calls: db-wal 1,003, log 20",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
