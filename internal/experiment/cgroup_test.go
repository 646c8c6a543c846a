package experiment

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/proctree"
	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
)

// cgroupOf is the cgroup path of pid in the hierarchy of controller (v1),
// or the unified one ("" controller).
func cgroupOf(t *testing.T, pid int, controller string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cgroup"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(l, ":", 3)
		if len(f) == 3 && ((controller == "" && f[0] == "0") || (controller != "" && strings.Contains(","+f[1]+",", ","+controller+","))) {
			return f[2]
		}
	}
	return ""
}

// TestCPUQuotaCgroup: cpu-quota makes a cgroup with the limit, moves the
// workload's process and the child it started into it, and removes it
// after the run, moving back first a process still in it.
func TestCPUQuotaCgroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making cgroups needs root")
	}
	e := &env{cpus: []int{0, 1}}
	c := conditions["cpu-quota"]
	settings, err := c.prepare(context.Background(), e)
	if err != nil {
		t.Fatalf("cpu-quota cannot be prepared here: %v", err)
	}
	if len(settings) != 2 || !strings.Contains(settings[1], "cgroup v") {
		t.Errorf("settings %q do not name the mechanism", settings)
	}
	controller := "cpu"
	if e.quotaPlace.version == 2 {
		controller = ""
	}
	cmd := exec.Command("sh", "-c", "sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		below, _ := proctree.Descendants("/proc", cmd.Process.Pid)
		for _, p := range below {
			if pr, err := os.FindProcess(p); err == nil {
				pr.Kill()
			}
		}
		cmd.Process.Kill()
		cmd.Wait()
	}()
	var child []int
	for deadline := time.Now().Add(5 * time.Second); len(child) == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		child, _ = proctree.Descendants("/proc", cmd.Process.Pid)
	}
	if len(child) == 0 {
		t.Fatal("the shell started no child")
	}
	origin := cgroupOf(t, os.Getpid(), controller)

	before, stop, err := c.apply(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	if err := before([]int{cmd.Process.Pid}); err != nil {
		stop()
		t.Fatal(err)
	}
	in := cgroupOf(t, cmd.Process.Pid, controller)
	if !strings.Contains(filepath.Base(in), cgroupPrefix) || cgroupOf(t, child[0], controller) != in {
		stop()
		t.Fatalf("the workload is in %q and its child in %q, want both in a perfsleuth cgroup", in, cgroupOf(t, child[0], controller))
	}
	dir := filepath.Join(e.quotaPlace.parent, filepath.Base(in))
	file, want := "cpu.cfs_quota_us", "100000"
	if e.quotaPlace.version == 2 {
		file, want = "cpu.max", "100000 100000"
	}
	if got := sysinfo.ReadString(filepath.Join(dir, file)); got != want {
		t.Errorf("%s = %q, want %q (half of 2 CPUs per 100 ms)", file, got, want)
	}
	if cgroupOf(t, os.Getpid(), controller) != origin {
		t.Errorf("perfsleuth's own process was moved")
	}

	// The run ends with the workload still running (a daemon it left):
	// its processes go back, the cgroup goes.
	stop()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the cgroup %s is still there (%v)", dir, err)
	}
	if got := cgroupOf(t, cmd.Process.Pid, controller); got != origin {
		t.Errorf("the workload left in %q, want it back in %q", got, origin)
	}
}
