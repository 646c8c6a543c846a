package experiment

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
)

// TestCacheLimitCgroup: a shell reads a 64 MiB file three times. Started
// cold without a limit it reads the file from the device once (the other
// passes hit the page cache); under cache-limit with a 16 MiB budget it
// reads it from the device every pass, its cgroup's page cache never
// passes the budget by more than a step's slack, nothing is killed, and
// the cgroup is gone after the run.
func TestCacheLimitCgroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making cgroups needs root")
	}
	dir := t.TempDir()
	if st, err := sysinfo.StorageOf(dir); err != nil || st.Device == "" {
		t.Skipf("%s is not on a block device (%v): its page cache cannot be told from the device's reads", dir, err)
	}
	const size, budget = 64 << 20, 16 << 20
	file := filepath.Join(dir, "data")
	buf := make([]byte, size)
	rand.Read(buf)
	if err := os.WriteFile(file, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	e := &env{evict: []string{dir}, cacheBudget: budget}
	c := conditions["cache-limit"]
	settings, err := c.prepare(context.Background(), e)
	if err != nil {
		t.Fatalf("cache-limit cannot be prepared here: %v", err)
	}
	t.Logf("settings: %q", settings)
	if all := strings.Join(settings, "; "); !strings.Contains(all, "16 MiB") || !strings.Contains(all, "cgroup v") || !strings.Contains(all, "memory.") {
		t.Errorf("settings %q do not give the budget and the mechanism", settings)
	}

	// run reads the file three times in a shell and returns what the
	// shell and its children read from the device (/proc/PID/io, which
	// takes in reaped children's) and, limited, the most page cache its
	// cgroup held at a sample.
	run := func(limited bool) (read, most int64) {
		t.Helper()
		script := fmt.Sprintf(`read go; for i in 1 2 3; do cat %s >/dev/null; done; grep read_bytes /proc/$$/io`, file)
		var out strings.Builder
		var wg sync.WaitGroup
		done := make(chan struct{})
		var h *held
		if limited {
			h = holdShell(t, c, e, &out, script)
			cg := findRunCgroup(t, e.cachePlace.parent)
			f := &cacheFollower{dir: cg, version: e.cachePlace.version}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					if _, cache, err := f.memoryOf(); err == nil {
						most = max(most, cache)
					}
					select {
					case <-done:
						return
					case <-time.After(5 * time.Millisecond):
					}
				}
			}()
			defer func() {
				if _, err := os.Stat(cg); !os.IsNotExist(err) {
					t.Errorf("the run's cgroup %s is still there (%v)", cg, err)
				}
			}()
		} else {
			h = holdShell(t, nil, e, &out, script)
			if err := evict(e.evict); err != nil {
				t.Fatal(err)
			}
		}
		_, err := h.release()
		close(done)
		wg.Wait()
		if err != nil {
			t.Fatalf("the shell: %v (killed?)", err)
		}
		_, v, _ := strings.Cut(strings.TrimSpace(out.String()), ":")
		read, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			t.Fatalf("read_bytes in %q: %v", out.String(), err)
		}
		return read, most
	}

	free, _ := run(false)
	limited, most := run(true)
	t.Logf("three passes over %d MiB: %.1f MiB from the device cold and unlimited, %.1f MiB under a %d MiB page cache (its cgroup held at most %.1f MiB)",
		size>>20, float64(free)/(1<<20), float64(limited)/(1<<20), budget>>20, float64(most)/(1<<20))
	if free < size*9/10 || free > size*3/2 {
		t.Errorf("unlimited, the passes read %d bytes from the device: want the file once (%d)", free, size)
	}
	if limited < size*5/2 {
		t.Errorf("under the limit, the passes read %d bytes from the device: want the file every pass (%d)", limited, 3*size)
	}
	if most == 0 || most > budget*5/4 {
		t.Errorf("the cgroup held at most %d bytes of page cache: want some, and at most the budget %d with a step's slack", most, budget)
	}
}

// findRunCgroup is the cgroup a condition made for this process's run in
// parent.
func findRunCgroup(t *testing.T, parent string) string {
	t.Helper()
	ents, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ents {
		if d.IsDir() && strings.HasPrefix(d.Name(), fmt.Sprintf("%s%d-", cgroupPrefix, os.Getpid())) {
			return filepath.Join(parent, d.Name())
		}
	}
	t.Fatalf("no cgroup of this run in %s", parent)
	return ""
}

// TestCacheLimitBudget: without --cache-limit the budget is half of the
// workload's files; with neither those files nor a budget the condition
// is skipped with what to give.
func TestCacheLimitBudget(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("finding where cgroups go needs root")
	}
	dir := t.TempDir()
	for i, n := range []int{3 << 20, 5 << 20} {
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(i)), make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := &env{evict: []string{dir}}
	settings, err := prepareCacheLimit(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	if e.cacheBudget != 4<<20 || !strings.Contains(settings[0], "4 MiB (50% of the 8 MiB of files under "+dir) {
		t.Errorf("budget %d, settings %q: want 4 MiB, half of the 8 MiB of files", e.cacheBudget, settings[0])
	}
	if _, err := prepareCacheLimit(context.Background(), &env{}); err == nil || !strings.Contains(err.Error(), "give --cache-limit SIZE") {
		t.Errorf("no files, no budget: %v: want what to give", err)
	}
}
