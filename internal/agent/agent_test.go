package agent

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/prometheus/procfs"

	"github.com/perfsleuth/perfsleuth/internal/export"
	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/probe"
	"golang.org/x/sys/unix"
)

// testCgroup makes a cgroup for the test below the test's own (the cpu
// hierarchy on cgroup v1, the unified one on v2), removed at the end.
func testCgroup(t *testing.T) string {
	t.Helper()
	self, err := procfs.Self()
	if err != nil {
		t.Fatal(err)
	}
	mounts, err := self.MountInfo()
	if err != nil {
		t.Fatal(err)
	}
	groups, err := self.Cgroups()
	if err != nil {
		t.Fatal(err)
	}
	var dir string
	for _, m := range mounts {
		for _, g := range groups {
			v2 := m.FSType == "cgroup2" && g.HierarchyID == 0
			_, cpu := m.SuperOptions["cpu"]
			v1 := m.FSType == "cgroup" && cpu && strings.Contains(","+strings.Join(g.Controllers, ",")+",", ",cpu,")
			if dir == "" && (v1 || v2) {
				dir = filepath.Join(m.MountPoint, strings.TrimPrefix(g.Path, m.Root))
			}
		}
	}
	if dir == "" {
		t.Skip("no cgroup hierarchy to make the test's cgroup in")
	}
	dir = filepath.Join(dir, fmt.Sprintf("perfsleuth-agent-test-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("make a cgroup: %v", err)
	}
	t.Cleanup(func() {
		for range 50 {
			if err := unix.Rmdir(dir); err == nil || os.IsNotExist(err) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Errorf("the test's cgroup %s is still there", dir)
	})
	return dir
}

// readLoop is the workload: one thread that reads a 64 MiB file 1 MiB at
// a time with O_DIRECT, over and over, until killed (python3: a Go
// program's runtime threads would add their own waits). 1 MiB a read: the
// device's transfer takes most of each turn, far more than python's CPU
// or the kernel's (a virtual disk's submission costs tens of µs here).
const readLoop = `import mmap, os, sys
f = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 1 << 20)
while True:
    for off in range(0, 64 << 20, 1 << 20):
        os.preadv(f, [buf], off)
`

// startIn starts the read loop in cgroup dir.
func startIn(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	cmd := startLoop(t)
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// startLoop starts the read loop on a file of its own.
func startLoop(t *testing.T) *exec.Cmd {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found: the test's workload is a python3 read loop")
	}
	data := filepath.Join(t.TempDir(), "data")
	buf := make([]byte, 64<<20)
	rand.Read(buf)
	if err := os.WriteFile(data, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-c", readLoop, data)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// scrape reads the agent's /metrics: its samples by series (name and
// labels as the text has them) and the text.
func scrape(t *testing.T, addr string) (map[string]float64, []byte) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("sample %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out, body
}

// runAgent runs an agent of cfg on 127.0.0.1 until the test ends, then
// checks that it ended with its context, and returns where it serves.
func runAgent(t *testing.T, cfg Config) string {
	t.Helper()
	addrs := make(chan string, 1)
	cfg.Listen, cfg.Serving = "127.0.0.1:0", func(addr string) { addrs <- addr }
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var log bytes.Buffer
	go func() { done <- a.Run(ctx, &log) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("the agent did not end with its context")
		}
		t.Logf("agent log: %q", log.String())
	})
	select {
	case addr := <-addrs:
		return addr
	case err := <-done:
		t.Fatalf("the agent ended before it served: %v", err)
	}
	return ""
}

// waitWindows waits until the cgroup has had at least n windows.
func waitWindows(t *testing.T, addr, cg string, n float64) map[string]float64 {
	t.Helper()
	key := fmt.Sprintf("perfsleuth_agent_windows_total{cgroup=%q}", cg)
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if m, _ := scrape(t, addr); m[key] >= n {
			return m
		}
	}
	t.Fatalf("the cgroup did not reach %.0f windows in 60 s", n)
	return nil
}

// topCategory is the category with the most seconds in cgroup cg.
func topCategory(m map[string]float64, cg string) (string, map[string]float64) {
	per := map[string]float64{}
	prefix := fmt.Sprintf("perfsleuth_agent_time_seconds_total{cgroup=%q,", cg)
	for k, v := range m {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			_, cat, _ := strings.Cut(rest, `category="`)
			per[strings.TrimSuffix(cat, `"}`)] += v
		}
	}
	top := ""
	for c, v := range per {
		if top == "" || v > per[top] {
			top = c
		}
	}
	return top, per
}

// TestAgentCgroup: an O_DIRECT read loop in a cgroup of its own reads
// storage-read in the agent's counters and verdict, the text passes
// promtool check metrics, OpenMetrics is served when asked for; the
// agent goes on when the workload is restarted (the new process is
// counted) and when the cgroup disappears (counted as missing), and ends
// with its context.
func TestAgentCgroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: the agent's eBPF probes and the test's cgroup need root")
	}
	dir := testCgroup(t)
	first := startIn(t, dir)
	addr := runAgent(t, Config{Window: 2 * time.Second, Cgroups: []string{dir}, MaxProcesses: 2, MaxCgroups: 1})

	m := waitWindows(t, addr, dir, 2)
	top, per := topCategory(m, dir)
	t.Logf("after 2 windows: %v", per)
	if top != "storage-read" {
		t.Errorf("top category %q (%v): want storage-read for an O_DIRECT read loop", top, per)
	}
	verdict := fmt.Sprintf("perfsleuth_agent_verdict_info{cgroup=%q,primary=\"storage-read\",secondary=\"\"}", dir)
	if m[verdict] != 1 {
		t.Errorf("no %s in %v", verdict, m)
	}
	if m["perfsleuth_agent_cpu_seconds_total"] <= 0 || m["perfsleuth_agent_resident_memory_bytes"] <= 0 || m["perfsleuth_agent_probe_cpu_seconds_total"] <= 0 {
		t.Errorf("the agent's own cost is not served: %v", m)
	}
	// The second window took the first's collections (the probes kept
	// loaded), and its counts are the ones asserted above.
	if kept := m[`perfsleuth_agent_probe_loads_total{how="kept"}`]; kept == 0 || m["perfsleuth_agent_window_errors_total"] != 0 {
		t.Errorf("collections kept %v, window errors %v: want the second window's probes taken from the first's, without errors",
			kept, m["perfsleuth_agent_window_errors_total"])
	}
	var blockReads float64
	for k, v := range m {
		if strings.HasPrefix(k, "perfsleuth_agent_block_service_seconds_count{") && strings.Contains(k, `op="read"`) {
			blockReads += v
		}
	}
	if blockReads == 0 {
		t.Errorf("no block reads in perfsleuth_agent_block_service_seconds: %v", m)
	}
	_, text := scrape(t, addr)
	if promtool, err := exec.LookPath("promtool"); err == nil {
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = bytes.NewReader(text)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics: %v\n%s", err, out)
		}
	} else {
		t.Log("promtool not found: the text is not checked by it here (CI installs it)")
	}
	req, _ := http.NewRequest("GET", "http://"+addr+"/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Error(err)
	} else {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") || !bytes.HasSuffix(body, []byte("# EOF\n")) {
			t.Errorf("asked for OpenMetrics, got %q ending %q", ct, body[max(0, len(body)-20):])
		}
	}

	// The workload restarts: the new process's reads are counted too.
	reads := per["storage-read"]
	first.Process.Kill()
	first.Wait()
	startIn(t, dir)
	windows := m[fmt.Sprintf("perfsleuth_agent_windows_total{cgroup=%q}", dir)]
	m = waitWindows(t, addr, dir, windows+2)
	if _, per = topCategory(m, dir); per["storage-read"] <= reads {
		t.Errorf("storage-read %.3f s after the restart, %.3f s before: want the new process counted", per["storage-read"], reads)
	}

	// The cgroup disappears: the agent goes on and says so.
	for _, p := range strings.Fields(string(must(os.ReadFile(filepath.Join(dir, "cgroup.procs"))))) {
		if pid, err := strconv.Atoi(p); err == nil {
			unix.Kill(pid, unix.SIGKILL)
		}
	}
	missing := fmt.Sprintf("perfsleuth_agent_target_missing_total{target=%q}", dir)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		unix.Rmdir(dir)
		if m, _ = scrape(t, addr); m[missing] >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cgroup gone, %s is %v after 30 s", missing, m[missing])
		}
	}
}

// TestHistogram: values land in the first bound at or above them, past the
// last only in the count; the encoded histogram is cumulative.
func TestHistogram(t *testing.T) {
	var h hist
	h.add(1000, 2)  // 1 µs: the first bound (1.024 µs)
	h.add(1<<20, 3) // 1.05 ms: 2^20 ns
	h.add(1<<40, 1) // past 34 s
	h.add(5000, 0)  // nothing
	if h.count != 6 || h.counts[0] != 2 || h.counts[20-histFirstLog2] != 3 {
		t.Errorf("%+v", h)
	}
	m := export.NewMetrics()
	m.Histogram("agent_x_seconds", "x", histLe, h.counts[:], h.count, 1.5, "kind", "fsync")
	text, err := m.Encode(false)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`perfsleuth_agent_x_seconds_bucket{kind="fsync",le="1.024e-06"} 2`, `perfsleuth_agent_x_seconds_bucket{kind="fsync",le="0.001048576"} 5`,
		`perfsleuth_agent_x_seconds_bucket{kind="fsync",le="+Inf"} 6`, `perfsleuth_agent_x_seconds_sum{kind="fsync"} 1.5`} {
		if !strings.Contains(string(text), want) {
			t.Errorf("no %q in\n%s", want, text)
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		return nil
	}
	return b
}

// TestAgentBounds: the process names per cgroup stop at MaxProcesses, the
// rest summed under other; bad configurations are refused with what to do.
func TestAgentBounds(t *testing.T) {
	a, err := New(Config{Listen: "127.0.0.1:0", Window: time.Second, PIDs: []int{1}, MaxProcesses: 2, MaxCgroups: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b", "c", "a", "d"} {
		a.nameFor("cg", n)
	}
	if got := a.names["cg"]; len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("names %q: want the first two", got)
	}
	if a.nameFor("cg", "c") != other || a.nameFor("cg", "b") != "b" {
		t.Error("a third name is not other, or a kept one lost its series")
	}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Window: time.Second, MaxProcesses: 1, MaxCgroups: 1}, "nothing to observe"},
		{Config{Window: time.Millisecond, PIDs: []int{1}, MaxProcesses: 1, MaxCgroups: 1}, "1s or more"},
		{Config{Window: time.Second, Cgroups: []string{t.TempDir()}, MaxProcesses: 1, MaxCgroups: 1}, "not a cgroup directory"},
		{Config{Window: time.Second, PIDs: []int{1}, MaxCgroups: 1}, "--max-processes 0"},
		{Config{Window: time.Second, PIDs: []int{1}, MaxProcesses: 1}, "--max-cgroups 0"},
		{Config{Window: time.Second, Kubepods: []string{"/nonexistent"}, MaxProcesses: 1, MaxCgroups: 1}, "--kubepods /nonexistent: not a directory"},
		{Config{Window: time.Second, PIDs: []int{os.Getpid()}, MaxProcesses: 1, MaxCgroups: 1}, "that is the agent itself"},
	} {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}

// TestAgentLeavesItselfOut: a cgroup that holds the agent (the root
// cgroup, or its own pod's under --kubepods) is observed without it:
// observe refuses to watch itself, and every window failed so before.
func TestAgentLeavesItselfOut(t *testing.T) {
	both, alone := t.TempDir(), t.TempDir()
	self := strconv.Itoa(os.Getpid())
	if err := os.WriteFile(filepath.Join(both, "cgroup.procs"), []byte("1\n"+self+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(alone, "cgroup.procs"), []byte(self+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{Window: time.Second, Cgroups: []string{both, alone}, MaxProcesses: 1, MaxCgroups: 2})
	if err != nil {
		t.Fatal(err)
	}
	by, empty := a.members()
	if len(by) != 1 || by[1] != both {
		t.Errorf("members %v: want pid 1 of %s alone", by, both)
	}
	if len(empty) != 1 || empty[0] != alone {
		t.Errorf("empty %v: want %s, which holds only the agent", empty, alone)
	}
}

// TestAgentCgroupTree: a --cgroup's processes are those of its whole
// subtree (a slice's live in its services' cgroups; a hierarchy's root is
// the machine), and a process born in a window is in the cgroup given when
// its own cgroup is that one or below it.
func TestAgentCgroupTree(t *testing.T) {
	root := t.TempDir()
	slice := filepath.Join(root, "system.slice")
	svc := filepath.Join(slice, "db.service")
	if err := os.MkdirAll(svc, 0o755); err != nil {
		t.Fatal(err)
	}
	for dir, procs := range map[string]string{root: "", slice: "", svc: "1\n"} {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(procs), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a, err := New(Config{Window: time.Second, Cgroups: []string{slice}, MaxProcesses: 1, MaxCgroups: 1})
	if err != nil {
		t.Fatal(err)
	}
	if by, empty := a.members(); len(by) != 1 || by[1] != slice || len(empty) != 0 {
		t.Errorf("members %v, empty %v: want pid 1, in %s's service, under the slice", by, empty, slice)
	}
	for _, c := range []struct {
		dir, path string
		want      bool
	}{
		{slice, "/system.slice/db.service", true},
		{slice, "/system.slice", true},
		{slice, "/user.slice/user-0.slice", false},
		{slice, "/", false},
		{root, "/user.slice/user-0.slice", true}, // the hierarchy's root: its parent is no cgroup
		{root, "/", true},
	} {
		if got := within(c.dir, c.path); got != c.want {
			t.Errorf("within(%s, %s) = %v, want %v", c.dir, c.path, got, c.want)
		}
	}
}

// TestAgentLeavesItsOwnThreadsOut: a window's threads of the agent's own
// process (tracked when it descends from an observed one, as from the
// shell that started it in the root cgroup) go to no series: the agent's
// cost has metrics of its own.
func TestAgentLeavesItsOwnThreadsOut(t *testing.T) {
	a, err := New(Config{Window: time.Second, PIDs: []int{1}, MaxProcesses: 20, MaxCgroups: 1})
	if err != nil {
		t.Fatal(err)
	}
	self := os.Getpid()
	run := &model.Run{TimeAccounting: &model.TimeAccounting{WindowSec: 1, Threads: []model.ThreadTime{
		{PID: 1, TID: 1, Comm: "init", Seconds: map[string]float64{"sleep": 1}},
		{PID: self, TID: self, Comm: "perfsleuth", Seconds: map[string]float64{"sleep": 0.9, "cpu": 0.1}},
	}}}
	a.add(run, map[int]string{1: byPID})
	if len(a.seconds) != 1 || a.seconds[seriesKey{byPID, "init", "sleep"}] != 1 {
		t.Errorf("series %v: want init's sleep alone", a.seconds)
	}
}

// TestAgentProfile: /profile?seconds=2 returns a pprof profile of the
// observed loop's on- and off-CPU stacks, its off-CPU time mostly
// storage-read; bad seconds are refused.
func TestAgentProfile(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: the agent's eBPF probes need root")
	}
	loop := startLoop(t)
	addr := runAgent(t, Config{Window: 2 * time.Second, PIDs: []int{loop.Process.Pid}, MaxProcesses: 4, MaxCgroups: 1})
	resp, err := http.Get("http://" + addr + "/profile?seconds=2")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/profile: %s: %s", resp.Status, body)
	}
	p, err := profile.ParseData(body)
	if err != nil {
		t.Fatalf("not a pprof profile: %v", err)
	}
	off := -1
	for i, st := range p.SampleType {
		if st.Type == "offcpu" {
			off = i
		}
	}
	if off < 0 || len(p.Sample) == 0 {
		t.Fatalf("sample types %v, %d samples: want off-CPU stacks", p.SampleType, len(p.Sample))
	}
	per := map[string]int64{}
	for _, s := range p.Sample {
		if c := s.Label["category"]; len(c) > 0 {
			per[c[0]] += s.Value[off]
		}
	}
	t.Logf("off-CPU ns by category: %v", per)
	wantMostlyStorageRead(t, per)
	wantBadRequests(t, addr, "seconds=0", "seconds=x", "seconds=100000", "push=otlp")
}

// wantMostlyStorageRead: the read loop's off-CPU time (ns by category) is
// mostly storage-read.
func wantMostlyStorageRead(t *testing.T, per map[string]int64) {
	t.Helper()
	if per["storage-read"] == 0 {
		t.Errorf("no storage-read time in the off-CPU profile (%v)", per)
	}
	for c, v := range per {
		if c != "storage-read" && v > per["storage-read"] {
			t.Errorf("off-CPU time mostly %s (%v): want storage-read for an O_DIRECT read loop", c, per)
		}
	}
}

// wantBadRequests: /profile with each query gets a 400.
func wantBadRequests(t *testing.T, addr string, queries ...string) {
	t.Helper()
	for _, q := range queries {
		resp, err := http.Get("http://" + addr + "/profile?" + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %s, want 400", q, resp.Status)
		}
	}
}

// sqliteLoop is a python3 sqlite3 workload: a small insert committed at a
// time (rollback journal), and now and then a scan.
const sqliteLoop = `import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("create table if not exists t(k integer primary key, v blob)")
i = 0
while True:
    db.execute("insert into t(v) values (randomblob(300))")
    db.commit()
    i += 1
    if i % 100 == 0:
        db.execute("select count(*), sum(length(v)) from t").fetchone()
`

// TestAgentStorage: with --storage the agent counts the page cache's
// lookups and a SQLite workload's pages by type.
func TestAgentStorage(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: the agent's eBPF probes need root")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	cmd := exec.Command(py, "-c", sqliteLoop, filepath.Join(t.TempDir(), "t.db"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := runAgent(t, Config{Window: 2 * time.Second, PIDs: []int{cmd.Process.Pid}, MaxProcesses: 4, MaxCgroups: 1,
		Probe: probe.Options{Interval: time.Second, Storage: true}})
	m := waitWindows(t, addr, byPID, 2)
	var dbWrites float64
	for k, v := range m {
		if strings.HasPrefix(k, `perfsleuth_agent_sqlite_page_ops_total{kind="db"`) && strings.HasSuffix(k, `op="write"}`) {
			dbWrites += v
		}
	}
	t.Logf("database page writes %.0f, page-cache lookups %.0f", dbWrites, m["perfsleuth_agent_page_cache_lookups_total"])
	if dbWrites == 0 {
		t.Errorf("no SQLite database page writes counted: %v", m)
	}
	if m["perfsleuth_agent_page_cache_lookups_total"] == 0 {
		t.Errorf("no page-cache lookups counted: %v", m)
	}
}
