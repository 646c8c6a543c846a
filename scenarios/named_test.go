package scenarios

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// Named causes (issue 17): what ended the waits, what the device was made
// to do.

// loopExt4 mounts a fresh 256 MiB ext4 (with its journal) on a loop
// device with the mount options opts and returns its directory, or skips.
func loopExt4(t *testing.T, opts string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("not root: the test mounts a file system")
	}
	for _, tool := range []string{"losetup", "mkfs.ext4", "mount", "umount"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found: the test needs a loop device with ext4 on it", tool)
		}
	}
	img := filepath.Join(t.TempDir(), "fs.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 256<<20); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "-f", "--show", img).Output()
	if err != nil {
		t.Skipf("no loop device here: %v", err)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("losetup", "-d", dev).Run() })
	if out, err := exec.Command("mkfs.ext4", "-q", dev).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4 %s: %v\n%s", dev, err, out)
	}
	dir := t.TempDir()
	args := []string{dev, dir}
	if opts != "" {
		args = append([]string{"-o", opts}, args...)
	}
	if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
		t.Skipf("mount %s: %v\n%s", dev, err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	return dir
}

// observeIn runs perfsleuth observe on a command in dir and returns the
// record.
func observeIn(t *testing.T, dir string, args ...string) *model.Run {
	t.Helper()
	rec := filepath.Join(t.TempDir(), "run.json")
	full := append([]string{"observe", "--interval", "200ms", "--json", rec, "--"}, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "perfsleuth"), full...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("perfsleuth %s: %v\n%s", strings.Join(full, " "), err, out)
	}
	run := loadRecord(t, rec)
	needEBPF(t, run)
	return run
}

func finding(run *model.Run, id string) *model.Finding {
	for i := range run.Findings {
		if run.Findings[i].ID == id {
			return &run.Findings[i]
		}
	}
	return nil
}

// TestNamedJournalWaker: an fsync loop on ext4 with a journal waits on the
// journal's commit thread, which the sync finding and the verdict name.
// Regression: "storage-sync", and jbd2 never named.
func TestNamedJournalWaker(t *testing.T) {
	dir := loopExt4(t, "")
	run := observeIn(t, dir, scenario(t, "storagesync"))
	f := finding(run, "sync.dominant")
	if f == nil {
		t.Fatalf("no sync.dominant; verdict %q", run.Verdict.Summary)
	}
	ev := strings.Join(f.Evidence, "\n")
	t.Logf("verdict: %s\nsync.dominant: %s", run.Verdict.Summary, ev)
	if !strings.Contains(ev, "kernel thread jbd2/") || !strings.Contains(run.Verdict.Summary, "jbd2/") {
		t.Errorf("the journal's commit thread is not named: verdict %q; evidence %s", run.Verdict.Summary, ev)
	}
}

// TestWriteAmplificationFound: 100-byte appends, each synced, make the
// device write ~40x what the program asked.
func TestWriteAmplificationFound(t *testing.T) {
	run := observeIn(t, t.TempDir(), scenario(t, "appendsync"))
	f := finding(run, "storage.write_amplification")
	if f == nil {
		t.Fatalf("no storage.write_amplification; findings %+v", run.Findings)
	}
	t.Logf("%s: %s", f.Summary, strings.Join(f.Evidence, "; "))
	if f.Test == nil || f.Test.Value < 10 {
		t.Errorf("ratio %+v: want 10x or more for 100-byte synced appends", f.Test)
	}
	if fs := finding(run, "device.queue_shallow"); fs != nil {
		t.Errorf("device.queue_shallow advises a deeper queue to a single-threaded appender: %s", fs.Summary)
	}
}

// TestDiscardsFound: removing 3000 files on ext4 mounted with discard.
// Regression: "storage-write ... (direct writes, dirty-page throttling,
// writeback)" with the device discarding, and a deeper queue advised.
func TestDiscardsFound(t *testing.T) {
	dir := loopExt4(t, "discard")
	run := observeIn(t, dir, scenario(t, "rmfiles"))
	f := finding(run, "device.discards")
	if f == nil {
		t.Fatalf("no device.discards; findings %+v", run.Findings)
	}
	ev := strings.Join(f.Evidence, "\n")
	t.Logf("%s: %s", f.Summary, ev)
	if !strings.Contains(ev, "mounted with discard") || !strings.Contains(ev, "fstrim") {
		t.Errorf("the advice does not name the mount option and fstrim: %s", ev)
	}
	if fs := finding(run, "device.queue_shallow"); fs != nil {
		t.Errorf("device.queue_shallow advises a deeper queue for discards: %s", fs.Summary)
	}
}
