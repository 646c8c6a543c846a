package analyze

import (
	"fmt"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// Sync time shares that make sync.dominant a warning and a critical finding.
// By Amdahl's law, removing a 25% share speeds the work up at most 1.33x:
// below that, syncs are not the first thing to fix. At 50% and above syncs
// cost more than everything else together (sqlite DELETE+FULL measures ~90%,
// WAL+NORMAL ~0%, so the thresholds separate them with room).
const (
	syncShareWarning  = 0.25
	syncShareCritical = 0.50
)

func syncDominant(run *model.Run) *model.Finding {
	ta := run.TimeAccounting
	if ta == nil {
		return nil
	}
	s := share(ta, model.CatStorageSync)
	if s < syncShareWarning {
		return nil
	}
	sev := "warning"
	if s >= syncShareCritical {
		sev = "critical"
	}
	ev := []string{fmt.Sprintf("storage-sync %.3fs of %.3fs busy-thread time", ta.Total[model.CatStorageSync], busySeconds(ta))}
	if by := endedBy(ta, model.CatStorageSync, 3); len(by) > 0 {
		ev = append(ev, "the sync waits were ended "+strings.Join(by, ", ")+
			" (a journaling file system's commit thread, jbd2 on ext4, writes the journal and flushes the device for a sync that needs a commit)")
	}
	ev = append(ev, "fewer syncs (group commits, WAL with synchronous=NORMAL, larger transactions) or a device with a faster flush would help; whether it is the critical path, an io-pressure experiment shows")
	return &model.Finding{
		Severity: sev,
		Summary:  fmt.Sprintf("flushing to storage takes %.0f%% of the busy threads' time", s*100),
		Evidence: ev,
		Test:     &model.FindingTest{Name: "storage-sync share", Value: s, Op: ">=", Threshold: syncShareWarning},
		Share:    &s,
	}
}
