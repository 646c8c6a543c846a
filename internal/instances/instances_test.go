package instances

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/runfile"
)

// TestOthers: an observation names the others that ran while it did, one
// that began and ended inside it too, and not one that ended before it
// began; the list goes when the last ends, and one killed is taken as
// ended.
func TestOthers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run", "instances")
	t0 := time.Now().Add(-time.Minute) // the killed one is marked ended now, after all of these
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

	// Another process, ended before this one began.
	early, _ := other(t)
	add(t, path, early, "perfsleuth bench fileio", at(0))
	end(t, path, early.PID, at(1))

	me := register(path, []string{"observe", "--", "sh"}, at(2))
	if me == nil {
		t.Fatal("register")
	}
	inside, stopInside := other(t)
	add(t, path, inside, "perfsleuth observe -- dd", at(3))
	end(t, path, inside.PID, at(4))
	stopInside()
	killed, kill := other(t)
	add(t, path, killed, "perfsleuth diagnose fileio", at(5))
	kill()

	got := me.Others(nil)
	want := []string{fmtEntry(inside.PID, "perfsleuth observe -- dd"), fmtEntry(killed.PID, "perfsleuth diagnose fileio")}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("Others = %q, want %q", got, want)
	}
	if got := me.Others(func(pid int) bool { return pid == inside.PID }); len(got) != 1 {
		t.Errorf("Others skipping %d = %q", inside.PID, got)
	}
	me.End()
	if _, err := os.Stat(filepath.Dir(path)); !os.IsNotExist(err) {
		t.Errorf("the list is left after the last ended: %v", err)
	}
	var none *Instance
	if none.Others(nil) != nil {
		t.Error("nil instance has others")
	}
	none.End()
}

// other starts a process that stands in for another perfsleuth, and
// returns its entry and what ends it.
func other(t *testing.T) (entry, func()) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	return entry{PID: pid, Start: runfile.StartTime(pid)}, func() { cmd.Process.Kill(); cmd.Wait() }
}

func add(t *testing.T, path string, e entry, args string, now time.Time) {
	e.Args, e.Began = args, now.UnixNano()
	in := &Instance{path: path}
	if err := in.update(now, func(es []entry) []entry { return append(es, e) }); err != nil {
		t.Fatal(err)
	}
}

func end(t *testing.T, path string, pid int, now time.Time) {
	in := &Instance{path: path}
	in.update(now, func(es []entry) []entry {
		for i := range es {
			if es[i].PID == pid {
				es[i].Ended = now.UnixNano()
			}
		}
		return es
	})
}

func fmtEntry(pid int, args string) string { return entry{PID: pid, Args: args}.String() }
