package report

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
