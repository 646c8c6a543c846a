package experiment

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
)

// A remembered device peak is used for a week, then measured again; a
// peaks file is replaced whole, and nothing else is left beside it.
func TestRememberedPeak(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	known := map[string]peakRecord{
		"vda:100": {BytesPerSec: 3e9, MeasuredAt: now.Add(-6 * 24 * time.Hour)},
		"vdb:100": {BytesPerSec: 1e9, MeasuredAt: now.Add(-8 * 24 * time.Hour)},
		"vdc:100": {BytesPerSec: 1e9, MeasuredAt: now.Add(time.Hour)},
		"vdd:100": {BytesPerSec: 0, MeasuredAt: now},
	}
	for key, want := range map[string]struct {
		rate  float64
		stale string
	}{
		"vda:100": {3e9, ""},
		"vdb:100": {0, "older than 7 days"},
		"vdc:100": {0, "in the future"},
		"vdd:100": {0, ""},
		"sda:5":   {0, ""},
		"":        {0, ""},
	} {
		rate, stale := remembered(known, key, now)
		if rate != want.rate || (want.stale == "") != (stale == "") || !strings.Contains(stale, want.stale) {
			t.Errorf("remembered(%q) = %g, %q; want %g, %q", key, rate, stale, want.rate, want.stale)
		}
	}

	dir := filepath.Join(t.TempDir(), "perfsleuth")
	path := filepath.Join(dir, peakFile)
	if err := writePeaks(path, known); err != nil {
		t.Fatal(err)
	}
	if err := writePeaks(path, map[string]peakRecord{"vda:100": known["vda:100"]}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]peakRecord
	if err := json.Unmarshal(b, &back); err != nil || len(back) != 1 || back["vda:100"].BytesPerSec != 3e9 {
		t.Errorf("peaks file %s: %v", b, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files beside the peaks file: %v", len(ents)-1, ents)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("peaks file mode: %v %v", fi.Mode(), err)
	}
}

// TestDeviceCurve: the curve of the disk under a test directory has IOPS
// for depth 1 and at least one more depth, more at depth 2 than at 1 (a
// disk serves requests in parallel: a virtio disk here, 18k IOPS at depth
// 1), and leaves nothing in the directory.
func TestDeviceCurve(t *testing.T) {
	dir := t.TempDir()
	st, err := sysinfo.StorageOf(dir)
	if err != nil || st.Device == "" {
		t.Skipf("no block device under %s (%v)", dir, err)
	}
	c, err := measureCurve(context.Background(), dir, st)
	if err != nil {
		if strings.Contains(err.Error(), "asynchronous engine") {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	t.Logf("%+v", *c)
	if len(c.Points) < 2 || c.Points[0].Depth != 1 || c.Points[0].IOPS <= 0 || c.Points[1].IOPS <= c.Points[0].IOPS {
		t.Errorf("curve %+v: want depth 1 and more, IOPS growing from depth 1 to 2", c.Points)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left in %s: %v", dir, ents)
	}
}
