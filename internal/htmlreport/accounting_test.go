package htmlreport

import (
	"regexp"
	"strings"
	"testing"
)

// The page shows the time by activity and state with its on-CPU column and
// each activity's part of the critical path, and each thread's part of the
// path beside its bar; a poller is marked, not given a part.
func TestActivityMatrixAndPathOnThePage(t *testing.T) {
	run := load(t, storageFixture)
	page, err := Render(run)
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	sec := html[strings.Index(html, "Time by activity and state"):]
	sec = sec[:strings.Index(sec, "</p>")]
	head := regexp.MustCompile(`<th[^>]*>([^<]*)</th>`).FindAllStringSubmatch(sec, -1)
	var cols []string
	for _, h := range head {
		cols = append(cols, h[1])
	}
	if got := strings.Join(cols, "|"); got != "doing|time|on the critical path|cpu|cpu-wait|storage-write|storage-sync|lock|other" {
		t.Errorf("matrix columns %q", got)
	}
	// The sync calls' row: 553 ms, as the sync table's fdatasync total,
	// 80% of the path; its cpu from the sync calls' split.
	for _, want := range []string{">sync<", ">553ms<", ">80%<", ">106ms<", ">433ms<", "unsampled: cpu time no on-CPU sample split"} {
		if !strings.Contains(sec, want) {
			t.Errorf("matrix lacks %q", want)
		}
	}
	if !strings.Contains(html, "688ms · path 100%") {
		t.Errorf("the busy thread's bar does not say its part of the path")
	}

	// A poller beside its worker.
	ta := run.TimeAccounting
	for i, th := range ta.Threads {
		if th.TID == 14329 {
			ta.Threads[i].Poller, ta.Threads[i].CriticalSec = true, 0
		}
	}
	page, err = Render(run)
	if err != nil {
		t.Fatal(err)
	}
	if html := string(page); !strings.Contains(html, " · left out") || !strings.Contains(html, "‡ left out of the critical path") {
		t.Errorf("a poller is not marked on its bar")
	}

	// A record without the matrix (made before it) has no table and no
	// path notes.
	ta.Matrix, ta.CriticalPath = nil, nil
	page, err = Render(run)
	if err != nil {
		t.Fatal(err)
	}
	if html := string(page); strings.Contains(html, "Time by activity and state") || strings.Contains(html, "· path") {
		t.Errorf("a record without a matrix shows one")
	}
}
