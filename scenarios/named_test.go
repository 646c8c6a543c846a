package scenarios

import (
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/loopfs"
	"github.com/perfsleuth/perfsleuth/internal/model"
)

// Named causes (issue 17): what ended the waits, what the device was made
// to do.

// loopExt4 mounts a fresh 256 MiB ext4 (with its journal) on a loop
// device with the mount options opts and returns its directory, or skips.
func loopExt4(t *testing.T, opts string) string {
	dir, _ := loopfs.Ext4(t, 256<<20, opts)
	return dir
}

// observeIn runs perfsleuth observe on a command in dir and returns the
// record, or skips without eBPF.
func observeIn(t *testing.T, dir string, args ...string) *model.Run {
	t.Helper()
	run := observeRecord(t, dir, nil, args...)
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

// TestNamedInodeLock: 16 threads writing one file wait on its inode lock,
// which the record names with the file's path and the lock finding says.
// Regression: "lock-bound ... (futexes, kernel locks)", and the file
// named only by a --stacks stack the user had to read.
func TestNamedInodeLock(t *testing.T) {
	dir := t.TempDir()
	run := observeIn(t, dir, scenario(t, "onefile"))
	ta := run.TimeAccounting
	if ta.Total[model.CatLock] <= 0 {
		t.Fatalf("no lock wait in the accounting: %v", ta.Total)
	}
	if len(ta.Locks) == 0 {
		t.Fatalf("no lock named; lock %.3fs in the accounting", ta.Total[model.CatLock])
	}
	top := ta.Locks[0]
	var sum float64
	for _, l := range ta.Locks {
		t.Logf("%.0f%% %.3fs %s (%s, %s calls, %d waits, %d walked); waiters %v; holder %v", 100*l.Seconds/ta.Total[model.CatLock], l.Seconds, l.Lock, l.Kind, l.Activity, l.Count, l.Walked, l.User, l.Holder)
		sum += l.Seconds
	}
	t.Logf("verdict: %s", run.Verdict.Summary)
	if top.Kind != model.LockFile || !strings.HasSuffix(top.Path, "/scenario-onefile.dat") || !strings.Contains(top.Lock, "inode lock") || top.Activity != "write" {
		t.Errorf("the top lock is %q (%s, path %q, %s calls): want the inode lock of scenario-onefile.dat, in write calls", top.Lock, top.Kind, top.Path, top.Activity)
	}
	// Every lock wait is in the table, as the accounting has it (every
	// thread's, the idle ones' too).
	lock := 0.0
	for _, th := range ta.Threads {
		lock += th.Seconds[model.CatLock]
	}
	if sum < 0.99*lock || sum > 1.01*lock {
		t.Errorf("the locks' waits add up to %.4fs, the threads' lock time is %.4fs", sum, lock)
	}
	if top.Walked == 0 || len(top.Kernel) == 0 {
		t.Errorf("no stack walked for %d waits on the top lock", top.Count)
	}
	f := finding(run, "lock.contention")
	if f != nil && !strings.Contains(strings.Join(f.Evidence, "\n"), "scenario-onefile.dat") {
		t.Errorf("lock.contention does not name the file: %s", strings.Join(f.Evidence, "; "))
	}
	if run.Verdict.Primary == model.CatLock && !strings.Contains(run.Verdict.Summary, "scenario-onefile.dat") {
		t.Errorf("a lock verdict that does not name the file: %s", run.Verdict.Summary)
	}
}

// TestNamedFutex: four threads taking turns on one pthread mutex, a
// static variable of the program, wait on its futex, which the record
// names by the variable.
func TestNamedFutex(t *testing.T) {
	run := observeIn(t, t.TempDir(), scenario(t, "lock"))
	ta := run.TimeAccounting
	if len(ta.Locks) == 0 {
		t.Fatalf("no lock named; lock %.3fs in the accounting", ta.Total[model.CatLock])
	}
	for _, l := range ta.Locks[:min(3, len(ta.Locks))] {
		t.Logf("%.3fs %s (%s, %s calls, %d waits, %d walked); waiters %v; holder %v", l.Seconds, l.Lock, l.Kind, l.Activity, l.Count, l.Walked, l.User, l.Holder)
	}
	top := ta.Locks[0]
	if top.Kind != model.LockFutex || !strings.HasPrefix(top.Lock, "futex mu+0x0 (lock)") {
		t.Errorf("the top lock is %q (%s): want the futex of the mutex mu of the program lock", top.Lock, top.Kind)
	}
	if share := top.Seconds / ta.Total[model.CatLock]; share < 0.9 {
		t.Errorf("the mutex has %.0f%% of the lock waits: want nearly all", share*100)
	}
	t.Logf("verdict: %s", run.Verdict.Summary)
}

// TestNamedKernelPath: reads served from the page cache: CPU-bound, in
// the kernel; the default observation's tick samples name the path.
// Regression: "CPU-bound 98%, sys 100%" and no finding.
func TestNamedKernelPath(t *testing.T) {
	run := observeIn(t, t.TempDir(), scenario(t, "cachedread"))
	ta := run.TimeAccounting
	if ta.OnCPUSource != model.OnCPUTick || ta.OnCPUSamples == 0 {
		t.Fatalf("no tick samples of the stacks by default: source %q, %d samples, note %q", ta.OnCPUSource, ta.OnCPUSamples, ta.OnCPUNote)
	}
	f := finding(run, "cpu.kernel_path")
	if f == nil {
		t.Fatalf("no cpu.kernel_path; verdict %q; %d samples, top stack %+v", run.Verdict.Summary, ta.OnCPUSamples, ta.OnCPU[0])
	}
	t.Logf("%s: %s", f.Summary, strings.Join(f.Evidence, "; "))
	// The most specific function on the path is filemap_get_pages,
	// filemap_read or the copy out (_copy_to_iter), by the samples of
	// the run: the path runs through filemap_read either way.
	if ev := strings.Join(f.Evidence, "\n"); !strings.Contains(f.Summary, "filemap_") && !strings.Contains(ev, "filemap_read") {
		t.Errorf("the path named is not on the page cache's read path (filemap_read): %s; %s", f.Summary, ev)
	}
	if f.Test == nil || f.Test.Value < 0.3 || f.Test.Value > 1 {
		t.Errorf("its share %+v: want 30%% to 100%%", f.Test)
	}
}
