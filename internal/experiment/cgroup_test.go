package experiment

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/model"
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

// held is a shell held before its work: started, moved under a condition
// (when one is given), and waiting for a line to go on.
type held struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	stop func()
}

// holdShell starts sh -c script (whose first command reads a line) with
// args, and applies condition c of e to it when c is not nil; out, when
// not nil, gets its output.
func holdShell(t *testing.T, c *condition, e *env, out io.Writer, script string, args ...string) *held {
	t.Helper()
	cmd := exec.Command("sh", append([]string{"-c", script}, args...)...)
	cmd.Stdout = out
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	h := &held{cmd: cmd, in: in, stop: func() {}}
	if c == nil {
		return h
	}
	before, stop, err := c.apply(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	h.stop = stop
	if err := before([]int{cmd.Process.Pid}); err != nil {
		stop()
		t.Fatal(err)
	}
	return h
}

// release lets the shell go on, waits for it and undoes the condition:
// how long it ran, and its error.
func (h *held) release() (time.Duration, error) {
	start := time.Now()
	h.in.Write([]byte("go\n"))
	h.in.Close()
	err := h.cmd.Wait()
	took := time.Since(start)
	h.stop()
	return took, err
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

// TestIOThrottleCgroup: io-throttle writes the limit for the disk under the
// workload's directory, names the mechanism, and the kernel holds an
// O_DIRECT writer in the cgroup to it: 16 MiB at 8 MiB/s take 1.5 s or
// more (this disk writes them in well under a second). The cgroup is gone
// after the run.
func TestIOThrottleCgroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making cgroups needs root")
	}
	dir := t.TempDir()
	st, err := sysinfo.StorageOf(dir)
	if err != nil || st.Device == "" {
		t.Skipf("no block device under %s (%v)", dir, err)
	}
	// The peak as --io-peak gives it: 16 MiB/s, so the limit is 8 MiB/s.
	// The peak IOPS as --io-peak-iops gives it: 1,000, so 500 a second.
	e := &env{cpus: []int{0, 1}, workDir: dir, store: st, ioPeak: 16 << 20, peakDoc: "given", peakIOPS: 1000, iopsDoc: "given"}
	c := conditions["io-throttle"]
	settings, err := c.prepare(context.Background(), e)
	if err != nil {
		t.Fatalf("io-throttle cannot be prepared here: %v", err)
	}
	t.Logf("settings: %q", settings)
	if !strings.Contains(settings[0], "8 MiB/s each") || !strings.Contains(strings.Join(settings, " "), "cgroup v") {
		t.Errorf("settings %q do not give the limit and the mechanism", settings)
	}
	controller := "blkio"
	if e.throttlePlace.version == 2 {
		controller = ""
	}
	// A shell that waits for a line, moved into the cgroup meanwhile, then
	// becomes dd.
	h := holdShell(t, c, e, nil, `read go; exec dd if=/dev/zero of="$0" bs=1M count=16 oflag=direct status=none`, filepath.Join(dir, "w"))
	cg := filepath.Join(e.throttlePlace.parent, filepath.Base(cgroupOf(t, h.cmd.Process.Pid, controller)))
	file := "blkio.throttle.write_bps_device"
	if e.throttlePlace.version == 2 {
		file = "io.max"
	}
	t.Logf("%s: %q", file, sysinfo.ReadString(filepath.Join(cg, file)))
	if got := sysinfo.ReadString(filepath.Join(cg, file)); !strings.Contains(got, "8388608") {
		t.Errorf("%s = %q, want the limit of 8 MiB/s (8388608)", file, got)
	}
	iopsFile := "blkio.throttle.write_iops_device"
	if e.throttlePlace.version == 2 {
		iopsFile = "io.max"
	}
	if got := sysinfo.ReadString(filepath.Join(cg, iopsFile)); !strings.Contains(got, "500") {
		t.Errorf("%s = %q, want the limit of 500 IOs a second", iopsFile, got)
	}
	if all := strings.Join(settings, " "); !strings.Contains(all, "500 requests a second") {
		t.Errorf("settings %q do not give the IOPS limit", settings)
	}
	took, err := h.release()
	if err != nil {
		t.Fatalf("dd: %v", err)
	}
	t.Logf("16 MiB of O_DIRECT writes in the cgroup took %v", took)
	if took < 1500*time.Millisecond {
		t.Errorf("16 MiB took %v at a limit of 8 MiB/s: not throttled", took)
	}
	if _, err := os.Stat(cg); !os.IsNotExist(err) {
		t.Errorf("the cgroup %s is still there (%v)", cg, err)
	}
}

// TestIOThrottleIOPS: the device's most IOPS are measured (its curve) and
// given in the settings; and with a peak of 400, 200 O_DIRECT writes of
// 4 KiB in the cgroup take about a second (dd makes thousands a second
// here unthrottled).
func TestIOThrottleIOPS(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making cgroups needs root")
	}
	dir := t.TempDir()
	st, err := sysinfo.StorageOf(dir)
	if err != nil || st.Device == "" {
		t.Skipf("no block device under %s (%v)", dir, err)
	}
	e := &env{cpus: []int{0, 1}, workDir: dir, store: st, ioPeak: 1 << 40, peakDoc: "given"}
	c := conditions["io-throttle"]
	settings, err := c.prepare(context.Background(), e)
	if err != nil {
		t.Fatalf("io-throttle cannot be prepared here: %v", err)
	}
	t.Logf("settings: %q", settings)
	if e.peakIOPS <= 0 || !strings.Contains(strings.Join(settings, " "), "requests a second each") {
		t.Fatalf("the device's IOPS were not measured: %q", settings)
	}
	// Then a peak far below what dd does here (thousands of writes a
	// second at depth 1), so that the limit binds: 400, held to 200.
	e.peakIOPS, e.iopsDoc = 400, "given"
	if _, err := c.prepare(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	limit := int(throttleShare * e.peakIOPS)
	n := limit // a second's worth at the limit
	h := holdShell(t, c, e, nil, `read go; exec dd if=/dev/zero of="$0" bs=4k count=$1 oflag=direct status=none`, filepath.Join(dir, "w"), strconv.Itoa(n))
	took, err := h.release()
	if err != nil {
		t.Fatalf("dd: %v", err)
	}
	t.Logf("%d O_DIRECT writes of 4 KiB at a limit of %d a second (the device's most: %.0f) took %v", n, limit, e.peakIOPS, took)
	if want := time.Duration(float64(n) / float64(limit) * 0.7 * float64(time.Second)); took < want {
		t.Errorf("%d writes took %v at %d a second: want %v or more", n, took, limit, want)
	}
}

// TestThrottleDevices: a file system on a partition is throttled on its
// disk, one on a whole disk or a dm device on that device.
func TestThrottleDevices(t *testing.T) {
	sys := t.TempDir()
	for name, dev := range map[string]string{"vda": "254:0", "vda1": "254:1", "dm-0": "253:0"} {
		if err := os.MkdirAll(filepath.Join(sys, name), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(sys, name, "dev"), []byte(dev+"\n"), 0o644)
	}
	os.WriteFile(filepath.Join(sys, "vda1", "partition"), []byte("1\n"), 0o644)
	for _, c := range []struct {
		st         *model.Storage
		names, num string
	}{
		{&model.Storage{Device: "vda", Disks: []string{"vda"}}, "vda", "254:0"},
		{&model.Storage{Device: "vda1", Disks: []string{"vda"}}, "vda", "254:0"},
		{&model.Storage{Device: "dm-0", Disks: []string{"vda"}}, "dm-0", "253:0"},
	} {
		names, nums, err := throttleDevices(c.st, sys)
		if err != nil || strings.Join(names, ",") != c.names || strings.Join(nums, ",") != c.num {
			t.Errorf("%s: %v %v (%v), want %s %s", c.st.Device, names, nums, err, c.names, c.num)
		}
	}
	if _, _, err := throttleDevices(&model.Storage{}, sys); err == nil || !strings.Contains(err.Error(), "tmpfs") {
		t.Errorf("no device: %v", err)
	}
	l := ioThrottle([]string{"254:0"}, 1<<20, 0)
	if len(l.v1) != 2 || l.v1[1] != [2]string{"blkio.throttle.write_bps_device", "254:0 1048576"} || l.v2[0] != [2]string{"io.max", "254:0 rbps=1048576 wbps=1048576"} {
		t.Errorf("limit files %v %v", l.v1, l.v2)
	}
	l = ioThrottle([]string{"254:0"}, 1<<20, 500)
	if len(l.v1) != 4 || l.v1[3] != [2]string{"blkio.throttle.write_iops_device", "254:0 500"} || l.v2[0] != [2]string{"io.max", "254:0 rbps=1048576 wbps=1048576 riops=500 wiops=500"} {
		t.Errorf("limit files with IOPS %v %v", l.v1, l.v2)
	}
}
