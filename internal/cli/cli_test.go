package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/analyze"
	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/report"
)

// These tests run the real binary: exit statuses, what goes to stdout and
// stderr, and what is left on disk are the user-facing contract.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "perfsleuth-cli-test-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "perfsleuth")
	build := exec.Command("go", "build", "-o", binary, "../../cmd/perfsleuth")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		os.RemoveAll(dir)
		panic("build perfsleuth: " + err.Error())
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
}

// run runs perfsleuth in dir with args and returns what it printed and its status.
func run(t *testing.T, dir string, args ...string) result {
	t.Helper()
	return runAs(t, nil, dir, args...)
}

// runAs is run as another user (cred nil: as this process).
func runAs(t *testing.T, cred *syscall.Credential, dir string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run perfsleuth %v: %v", args, err)
	}
	return result{out.String(), errb.String(), code}
}

// oneError checks the contract for an error: exit status 2, nothing on
// stdout, one line on stderr starting "perfsleuth: error: ". It returns
// that line.
func oneError(t *testing.T, r result) string {
	t.Helper()
	if r.code != 2 {
		t.Fatalf("exit status %d, want 2\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "perfsleuth: error: ") {
		t.Fatalf("want one error line, got:\n%s", r.stderr)
	}
	if r.stdout != "" {
		t.Errorf("stdout should be empty on error, got %q", r.stdout)
	}
	return lines[0]
}

// agrees holds a record a test made to perfsleuth's check of its own
// figures (perfsleuth.inconsistent), with this build's rules: every record
// the tests make must show no disagreement.
func agrees(t *testing.T, rec string) {
	t.Helper()
	run, err := model.Load(rec)
	if err != nil {
		t.Fatal(err)
	}
	analyze.Run(run)
	for _, e := range analyze.Inconsistencies(run) {
		t.Errorf("%s disagrees with itself: %s", filepath.Base(rec), e)
	}
}

// listing is every path below dir, to check that nothing was left behind.
func listing(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

func TestBadInputGivesOneClearErrorAndExit2(t *testing.T) {
	work := t.TempDir()
	foreign := t.TempDir()
	os.WriteFile(filepath.Join(foreign, "precious.txt"), []byte("keep me"), 0o644)
	cases := []struct {
		name string
		args []string
		want string // a phrase the error line must contain
	}{
		{"unknown flag", []string{"bench", "fileio", "--bogus"}, "unknown flag: --bogus"},
		{"bs larger than size", []string{"bench", "fileio", "--bs", "8k", "--size", "4k"}, "--bs"},
		{"zero files", []string{"bench", "fileio", "--files", "0"}, "--files"},
		{"bad rw", []string{"bench", "fileio", "--rw", "sideways"}, "randread"},
		{"bad size", []string{"bench", "fileio", "--size", "lots"}, "not a size"},
		{"dir does not exist", []string{"bench", "fileio", "--dir", "/nonexistent/perfsleuth"}, "/nonexistent/perfsleuth"},
		{"dir holds foreign files", []string{"bench", "fileio", "--dir", foreign, "--size", "1m", "--ops", "10"}, "--force"},
		{"sqlite bad journal", []string{"bench", "sqlite", "--journal", "sometimes"}, "wal"},
		{"sqlite dir does not exist", []string{"bench", "sqlite", "--dir", "/nonexistent/perfsleuth"}, "/nonexistent/perfsleuth"},
		{"command not found", []string{"observe", "--", "perfsleuth-no-such-command"}, "not found"},
		{"pid gone", []string{"observe", "-p", "999999999", "--duration", "1s"}, "not running"},
		{"observe nothing", []string{"observe"}, "nothing to observe"},
		{"observe unknown workload", []string{"observe", "fio"}, "unknown"},
		{"report missing file", []string{"report", filepath.Join(work, "none.json")}, "none.json"},
		{"json dir not writable", []string{"bench", "fileio", "--json", "/nonexistent/x.json"}, "--json"},
		{"syscalls without ebpf", []string{"observe", "--no-ebpf", "--syscalls", "--", "true"}, "--no-ebpf"},
		{"diagnose one repeat", []string{"diagnose", "--repeat", "1", "--", "true"}, "--repeat"},
		{"diagnose unknown condition", []string{"diagnose", "--conditions", "cpu-half,moon-phase", "--", "true"}, "moon-phase"},
		{"diagnose a pid", []string{"diagnose", "-p", "1"}, "--quick"},
		{"diagnose metric without group", []string{"diagnose", "--metric", "score: [0-9]+", "--", "true"}, "group"},
		{"diagnose bad metric", []string{"diagnose", "--metric", "(", "--", "true"}, "regular expression"},
		{"diagnose metric on a builtin", []string{"diagnose", "--metric", "(x)", "fileio"}, "for commands"},
		{"diagnose quick with repeat", []string{"diagnose", "--quick", "--repeat", "5", "--", "true"}, "--quick"},
		{"diagnose io share", []string{"diagnose", "--io-share", "150", "--", "true"}, "--io-share"},
		{"diagnose metric not printed", []string{"diagnose", "--conditions", "cpu-half", "--metric", "rate=([0-9]+)", "--", "echo", "no number"}, "matched no line"},
		{"diagnose failing command", []string{"diagnose", "--conditions", "cpu-half", "--", "false"}, "status 1"},
		{"diagnose budget too short", []string{"diagnose", "--conditions", "cpu-half,cpu-contention", "--budget", "1ms", "--", "true"}, "--budget"},
		{"diagnose scale a parameter it has not", []string{"diagnose", "--scale", "rows=1,2", "--", "true"}, "threads=N1,N2"},
		{"diagnose scale one level", []string{"diagnose", "--scale", "threads=4", "--", "true"}, "two levels"},
		{"diagnose scale levels out of order", []string{"diagnose", "--scale", "threads=4,2", "--", "true"}, "increasing order"},
		{"diagnose scale a bad level", []string{"diagnose", "--scale", "threads=1,x", "--", "true"}, "not a level"},
		{"diagnose scale with conditions", []string{"diagnose", "--scale", "threads=1,2", "--conditions", "cpu-half", "--", "true"}, "not conditions"},
		{"diagnose scale without placeholder", []string{"diagnose", "--scale", "threads=1,2", "--metric", "(x)", "--", "true"}, "{threads}"},
		{"diagnose scale without a throughput", []string{"diagnose", "--scale", "threads=1,2", "--", "echo", "{threads}"}, "needs a throughput"},
		{"diagnose scale sqlite", []string{"diagnose", "--scale", "threads=1,2", "sqlite"}, "no threads"},
		{"diagnose scale quick", []string{"diagnose", "--quick", "--scale", "threads=1,2", "--", "true"}, "--quick"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			line := oneError(t, run(t, work, c.args...))
			if !strings.Contains(line, c.want) {
				t.Errorf("error %q does not mention %q", line, c.want)
			}
			if l := listing(t, work); len(l) != 0 {
				t.Errorf("left behind in the working directory: %v", l)
			}
		})
	}
	if l := listing(t, foreign); len(l) != 1 || l[0] != "precious.txt" {
		t.Errorf("foreign directory changed: %v", l)
	}
}

func TestReportRendersARecordAsTheRunDid(t *testing.T) {
	work := t.TempDir()
	rec := filepath.Join(work, "run.json")
	r := run(t, work, "bench", "fileio", "--rw", "randwrite", "--size", "4m", "--ops", "2000", "--fsync", "100", "--json", rec)
	if r.code != 0 {
		t.Fatalf("bench failed (%d): %s", r.code, r.stderr)
	}
	if r.stderr != "" {
		t.Errorf("stderr is not a terminal, so no progress bar should be drawn; got %q", r.stderr)
	}
	again := run(t, work, "report", rec)
	if again.code != 0 {
		t.Fatalf("report failed (%d): %s", again.code, again.stderr)
	}
	if again.stdout != r.stdout {
		t.Errorf("report renders differently from the run:\n--- run\n%s\n--- report\n%s", r.stdout, again.stdout)
	}
	loaded, err := model.Load(rec)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.SchemaVersion != model.SchemaVersion || loaded.Target.FileIO == nil || loaded.Result == nil || loaded.Result.FileIO == nil {
		t.Fatalf("record lacks its parts: %+v", loaded)
	}
	writes, syncs := opCount(loaded, "write"), opCount(loaded, "fsync")
	if writes != 2000 || syncs != 20 {
		t.Errorf("record says %d writes and %d fsyncs, want 2000 and 20", writes, syncs)
	}
	// Everything on the terminal fits 80 columns.
	for _, l := range strings.Split(r.stdout, "\n") {
		if n := len([]rune(l)); n > report.Width {
			t.Errorf("line of %d columns: %q", n, l)
		}
	}
	if !strings.Contains(r.stdout, "fsync") {
		t.Errorf("the output does not state the sync setting:\n%s", r.stdout)
	}
	if l := listing(t, work); len(l) != 1 {
		t.Errorf("left behind: %v (only run.json should remain)", l)
	}
	agrees(t, rec)
	// A record from a newer perfsleuth is refused with a clear message.
	var raw map[string]any
	b, _ := os.ReadFile(rec)
	json.Unmarshal(b, &raw)
	raw["schema_version"] = model.SchemaVersion + 1
	b, _ = json.Marshal(raw)
	os.WriteFile(rec, b, 0o644)
	if r := run(t, work, "report", rec); r.code != 2 || !strings.Contains(r.stderr, "upgrade perfsleuth") {
		t.Errorf("newer record: status %d, stderr %q", r.code, r.stderr)
	}
}

func TestObserveCommandSeesItsProcessTree(t *testing.T) {
	work := t.TempDir()
	rec := filepath.Join(work, "cmd.json")
	// A shell that starts a child which burns CPU and writes 4 MiB.
	script := "sh -c 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; dd if=/dev/zero of=out bs=64k count=64 2>/dev/null; rm -f out'"
	r := run(t, work, "observe", "--interval", "100ms", "--json", rec, "--", "sh", "-c", script)
	if r.code != 0 {
		t.Fatalf("observe failed (%d): %s", r.code, r.stderr)
	}
	loaded, err := model.Load(rec)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Result == nil || loaded.Result.Command == nil || loaded.Result.Command.ExitCode != 0 {
		t.Fatalf("no command result: %+v", loaded.Result)
	}
	o := loaded.Observation
	if o == nil || o.Source != "procfs" {
		t.Fatalf("no procfs observation: %+v", o)
	}
	if o.Totals.Process.UserSec+o.Totals.Process.SystemSec <= 0 {
		t.Errorf("no CPU time seen for a CPU-burning tree: %+v", o.Totals.Process)
	}
	if o.Totals.Process.WChar < 4<<20 {
		t.Errorf("wchar %d, want at least the 4 MiB dd wrote", o.Totals.Process.WChar)
	}
	if len(o.Timeline) < 2 {
		t.Errorf("want a timeline, got %d samples", len(o.Timeline))
	}
	agrees(t, rec)
}

// With --syscalls and --stacks, the record holds the syscalls of the
// command's tree, its off-CPU stacks named, and the file it synced.
func TestObserveSyscallsStacksAndSyncedFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: --syscalls and --stacks need the eBPF probe")
	}
	work := t.TempDir()
	rec := filepath.Join(work, "detail.json")
	script := "dd if=/dev/zero of=synced.dat bs=4k count=16 conv=fdatasync 2>/dev/null; sleep 0.3; rm synced.dat"
	r := run(t, work, "observe", "--syscalls", "--stacks", "--json", rec, "--", "sh", "-c", script)
	if r.code != 0 {
		t.Fatalf("observe failed (%d): %s", r.code, r.stderr)
	}
	loaded, err := model.Load(rec)
	if err != nil {
		t.Fatal(err)
	}
	ta := loaded.TimeAccounting
	if ta == nil || ta.Source != "ebpf" {
		t.Skipf("no eBPF accounting here: %v", loaded.Warnings)
	}
	calls := map[string]int64{}
	for _, s := range ta.Syscalls {
		calls[s.Name] += s.Count
	}
	if calls["execve"] < 2 || calls["clock_nanosleep"]+calls["nanosleep"] < 1 || calls["fdatasync"] != 1 {
		t.Errorf("syscalls: execve %d, sleeps %d, fdatasync %d; want >= 2, >= 1, 1", calls["execve"], calls["clock_nanosleep"]+calls["nanosleep"], calls["fdatasync"])
	}
	var synced bool
	for _, f := range ta.SyncedFiles {
		synced = synced || strings.HasSuffix(f.Path, "/synced.dat") && f.Count == 1
	}
	if !synced && ta.SyncNote == "" {
		t.Errorf("synced.dat not among the synced files: %+v", ta.SyncedFiles)
	}
	// dd's fdatasync is a storage-sync sleep of a busy thread (the shell
	// and sleep(1) wait the whole time: idle, their stacks left out).
	var named bool
	for _, o := range ta.OffCPU {
		for _, f := range o.Kernel {
			named = named || o.Category == "storage-sync" && strings.Contains(f, "fdatasync")
		}
	}
	if !named {
		t.Errorf("no storage-sync off-CPU kernel stack names fdatasync: %+v", ta.OffCPU)
	}
	if ta.OffCPUIdleSec < 0.25 {
		t.Errorf("idle threads' sleep %.3fs, want the shell's and sleep's 0.3 s", ta.OffCPUIdleSec)
	}
	if !strings.Contains(r.stderr, "off-CPU stacks") || !strings.Contains(r.stderr, "syscall ") {
		t.Errorf("terminal view (on stderr: the command owns stdout) lacks the syscall table or the stacks:\n%s", r.stderr)
	}
	if ta.ProbeCPUSec <= 0 || len(ta.Programs) == 0 {
		t.Errorf("no probe cost estimate: %v s, %d programs, note %q", ta.ProbeCPUSec, len(ta.Programs), ta.ProbeNote)
	}
	agrees(t, rec)
}

// With --stacks, the on-CPU samples of a busy command add up to the CPU
// time /proc gives it, at the sampling frequency.
func TestObserveOnCPUSamples(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: --stacks needs the eBPF probe")
	}
	work := t.TempDir()
	rec := filepath.Join(work, "oncpu.json")
	script := "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done"
	r := run(t, work, "observe", "--stacks", "--json", rec, "--", "sh", "-c", script)
	if r.code != 0 {
		t.Fatalf("observe failed (%d): %s", r.code, r.stderr)
	}
	loaded, err := model.Load(rec)
	if err != nil {
		t.Fatal(err)
	}
	ta := loaded.TimeAccounting
	if ta == nil || ta.Source != "ebpf" {
		t.Skipf("no eBPF accounting here: %v", loaded.Warnings)
	}
	if ta.OnCPUHz <= 0 || len(ta.OnCPU) == 0 {
		t.Fatalf("no on-CPU samples: hz %d, note %q", ta.OnCPUHz, ta.OnCPUNote)
	}
	var samples int64
	for _, o := range ta.OnCPU {
		samples += o.Samples
		if o.Comm != "sh" {
			t.Errorf("a sample of %q (tid %d), want only the shell", o.Comm, o.TID)
		}
	}
	cpu := loaded.Observation.Totals.Process.UserSec + loaded.Observation.Totals.Process.SystemSec
	want := cpu * float64(ta.OnCPUHz)
	t.Logf("%d samples at %d Hz; /proc says %.3f s of CPU (%.0f samples)", samples, ta.OnCPUHz, cpu, want)
	if float64(samples) < 0.75*want || float64(samples) > 1.25*want {
		t.Errorf("%d samples, want %.0f ± 25%% (the CPU time /proc counted × Hz)", samples, want)
	}
	if !strings.Contains(r.stderr, "on-CPU samples at") {
		t.Errorf("terminal view (on stderr) lacks the on-CPU view:\n%s", r.stderr)
	}
	agrees(t, rec)
}

// A command's failure is perfsleuth's exit status, as under time and perf
// stat (a signal as a shell reports it), after the report; --ignore-failure
// exits 0. Issue 18: observe -- sh -c "exit 3" exited 0.
func TestObserveCommandPassesExitStatusOn(t *testing.T) {
	work := t.TempDir()
	r := run(t, work, "observe", "--", "sh", "-c", "exit 3")
	if r.code != 3 {
		t.Fatalf("exit status %d, want the command's 3: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "exit status 3") {
		t.Errorf("the report does not give the command's exit status:\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, "perfsleuth: sh exited with status 3") || !strings.Contains(r.stderr, "--ignore-failure") {
		t.Errorf("no closing line saying why perfsleuth exits 3:\n%s", r.stderr)
	}
	if r := run(t, work, "observe", "--ignore-failure", "--", "sh", "-c", "exit 3"); r.code != 0 || !strings.Contains(r.stderr, "exit status 3") {
		t.Errorf("--ignore-failure: status %d, want 0 and the report:\n%s", r.code, r.stderr)
	}
	if r := run(t, work, "observe", "-i", "--", "sh", "-c", "exit 3"); r.code != 0 {
		t.Errorf("-i: status %d, want 0", r.code)
	}
	if r := run(t, work, "observe", "--", "sh", "-c", "kill -TERM $$"); r.code != 128+15 || !strings.Contains(r.stderr, "killed by SIGTERM") {
		t.Errorf("a command killed by SIGTERM: status %d, want 143 and the signal named:\n%s", r.code, r.stderr)
	}
}

// The command's stdout is its own, byte for byte (issue 18: observe -- fio
// --output-format=json | jq broke); the report goes to stderr, or to
// --output.
func TestObserveCommandOwnsStdout(t *testing.T) {
	work := t.TempDir()
	const printed = "{\"a\": 1}\nno newline at the end"
	r := run(t, work, "observe", "--", "printf", "%s", printed)
	if r.code != 0 {
		t.Fatalf("observe failed (%d): %s", r.code, r.stderr)
	}
	if r.stdout != printed {
		t.Errorf("stdout %q, want the command's own %q", r.stdout, printed)
	}
	if !strings.Contains(r.stderr, "perfsleuth observe") {
		t.Errorf("the report is not on stderr:\n%s", r.stderr)
	}
	report := filepath.Join(work, "report.txt")
	r = run(t, work, "observe", "--output", report, "--", "printf", "%s", printed)
	if r.code != 0 || r.stdout != printed {
		t.Fatalf("observe --output: status %d, stdout %q", r.code, r.stdout)
	}
	if strings.Contains(r.stderr, "perfsleuth observe") {
		t.Errorf("with --output the report is still on stderr:\n%s", r.stderr)
	}
	if b, err := os.ReadFile(report); err != nil || !strings.HasPrefix(string(b), "perfsleuth observe") {
		t.Errorf("--output %s: %v, holds:\n%s", report, err, b)
	}
	// A built-in benchmark prints nothing of its own: its report stays on
	// stdout.
	if r := run(t, work, "observe", "fileio", "--rw", "write", "--size", "1m", "--duration", "200ms"); r.code != 0 || !strings.HasPrefix(r.stdout, "perfsleuth observe") {
		t.Errorf("observe fileio: status %d, the report not on stdout:\n%s", r.code, r.stdout)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"observe", "--json", "-", "--", "true"}, "give --json a file name"},
		{[]string{"observe", "--output", "-", "--", "true"}, "--output needs a file name"},
		{[]string{"observe", "--output", "same", "--json", "same", "--", "true"}, "its own file"},
		{[]string{"observe", "--output", "/nonexistent/r.txt", "--", "true"}, "not writable"},
	} {
		if line := oneError(t, run(t, work, c.args...)); !strings.Contains(line, c.want) {
			t.Errorf("%v: %q, want it to say %q", c.args, line, c.want)
		}
	}
}

func TestObservePIDUntilItExits(t *testing.T) {
	work := t.TempDir()
	sleeper := exec.Command("sleep", "4")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { sleeper.Wait(); close(done) }()
	start := time.Now()
	r := run(t, work, "observe", "-p", itoa(sleeper.Process.Pid), "--interval", "100ms", "--duration", "30s")
	<-done
	if r.code != 0 {
		t.Fatalf("observe -p failed (%d): %s", r.code, r.stderr)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("observation went on %s after the process exited", el)
	}
	if !strings.Contains(r.stdout, "exited") {
		t.Errorf("the output does not say the process exited:\n%s", r.stdout)
	}
}

// observe -p PID -- CMD: a running process (a server) and a command (its
// client) are one workload, ended by the command; the process is left
// running. Issue 18: pgbench and PostgreSQL could not be observed together.
func TestObserveServerWithClient(t *testing.T) {
	work := t.TempDir()
	// The "server" burns CPU; the "client" sleeps: the accounting must
	// hold the server's CPU time, which the client alone does not have.
	server := exec.Command("sh", "-c", "while :; do :; done")
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { server.Process.Kill(); server.Wait() }()
	rec := filepath.Join(work, "run.json")
	r := run(t, work, "observe", "--interval", "100ms", "--json", rec, "-p", itoa(server.Process.Pid), "--", "sleep", "1")
	if r.code != 0 {
		t.Fatalf("observe -p PID -- CMD failed (%d): %s", r.code, r.stderr)
	}
	if err := server.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the server was not left running: %v", err)
	}
	loaded, err := model.Load(rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded.Target.With) != 1 || loaded.Target.With[0].PID != server.Process.Pid || loaded.Target.Kind != "command" {
		t.Fatalf("target %+v, want the command with pid %d", loaded.Target, server.Process.Pid)
	}
	if loaded.Result == nil || loaded.Result.Command == nil || loaded.Result.Command.WallSec < 0.9 || loaded.Result.Command.WallSec > 5 {
		t.Errorf("result %+v: the command's second should end the run", loaded.Result)
	}
	ta := loaded.TimeAccounting
	if ta == nil {
		t.Skip("no time accounting here")
	}
	var serverCPU, clientWall float64
	for _, th := range ta.Threads {
		switch {
		case th.PID == server.Process.Pid:
			serverCPU += th.Seconds["cpu"] + th.Seconds["cpu-wait"]
		case th.Comm == "sleep":
			clientWall += th.WallSec
		}
	}
	if serverCPU < 0.5 || clientWall < 0.9 {
		t.Errorf("server's cpu+cpu-wait %.2fs, client's wall %.2fs: want the server busy about the client's 1s", serverCPU, clientWall)
	}
	if !strings.Contains(r.stderr, itoa(server.Process.Pid)) {
		t.Errorf("the report does not name the server's pid:\n%s", r.stderr)
	}
	agrees(t, rec)
	// A pid given twice, and --duration with a command, are refused.
	if line := oneError(t, run(t, work, "observe", "-p", itoa(server.Process.Pid), "-p", itoa(server.Process.Pid), "--duration", "1s")); !strings.Contains(line, "twice") {
		t.Errorf("a pid given twice: %q", line)
	}
	if line := oneError(t, run(t, work, "observe", "-p", itoa(server.Process.Pid), "--duration", "1s", "--", "true")); !strings.Contains(line, "--duration") {
		t.Errorf("--duration with a command: %q", line)
	}
}

// A process that sets its title (as PostgreSQL's walwriter does) is named
// by it in the record and the views, not by its comm (issue 18: 14
// PostgreSQL processes all labelled postgres).
func TestProcessTitles(t *testing.T) {
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("no perl here to set a process title")
	}
	work := t.TempDir()
	rec := filepath.Join(work, "run.json")
	r := run(t, work, "observe", "--interval", "100ms", "--json", rec, "--", "perl", "-e", `$0 = "sleuthtest: worker"; my $i = 0; $i++ while $i < 5e7;`)
	if r.code != 0 {
		t.Fatalf("observe failed (%d): %s", r.code, r.stderr)
	}
	loaded, err := model.Load(rec)
	if err != nil {
		t.Fatal(err)
	}
	titled := 0
	for _, th := range loaded.Observation.Totals.Threads {
		if th.Title == "sleuthtest: worker" {
			titled++
		}
	}
	if titled == 0 {
		t.Errorf("no thread of perl carries its title: %+v", loaded.Observation.Totals.Threads)
	}
	if ta := loaded.TimeAccounting; ta != nil {
		found := false
		for _, th := range ta.Threads {
			found = found || th.Title == "sleuthtest: worker"
		}
		if !found {
			t.Errorf("the accounting's threads lack the title: %+v", ta.Threads)
		}
	}
	if !strings.Contains(r.stderr, "sleuthtest: worker") {
		t.Errorf("the report does not name the process by its title:\n%s", r.stderr)
	}
	// A script: comm says only "perl"; the script's name is its title.
	script := filepath.Join(work, "sleuth-script.pl")
	if err := os.WriteFile(script, []byte("my $i = 0; $i++ while $i < 5e7;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = run(t, work, "observe", "--interval", "100ms", "--json", rec, "--", "perl", script)
	if r.code != 0 {
		t.Fatalf("observe failed (%d): %s", r.code, r.stderr)
	}
	if loaded, err = model.Load(rec); err != nil {
		t.Fatal(err)
	}
	for _, th := range loaded.Observation.Totals.Threads {
		if th.Comm != "perl" || th.Title != "sleuth-script.pl" {
			t.Errorf("thread %+v: want comm perl, title sleuth-script.pl", th)
		}
	}
	if !strings.Contains(r.stderr, "sleuth-script.pl") {
		t.Errorf("the report does not name the script:\n%s", r.stderr)
	}
}

func TestCtrlCStopsTheRunPrintsWhatWasMeasuredAndCleansUp(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "fileio", "--rw", "randwrite", "--size", "16m", "--duration", "60s"},
		{"observe", "--interval", "100ms", "fileio", "--rw", "randwrite", "--size", "16m", "--duration", "60s"},
		{"bench", "sqlite", "--rows", "100000000", "--sync", "off"},
		{"observe", "--interval", "100ms", "sqlite", "--rows", "100000000", "--sync", "off"},
	} {
		t.Run(strings.Join(args[:2], " "), func(t *testing.T) {
			work := t.TempDir()
			cmd := exec.Command(binary, args...)
			cmd.Dir = work
			cmd.Env = append(os.Environ(), "NO_COLOR=1")
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Into the measured phase: observe first calibrates its probe
			// (~0.5 s, overlapping the prepare step) and loads it, which
			// on a loaded 2-CPU machine can take most of 1.5 s.
			time.Sleep(3 * time.Second)
			cmd.Process.Signal(syscall.SIGINT)
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 130 {
				t.Fatalf("want exit status 130, got %v\nstdout: %s\nstderr: %s", err, out.String(), errb.String())
			}
			if !strings.Contains(out.String(), "INTERRUPTED") || !strings.Contains(out.String(), "result") {
				t.Errorf("partial results not printed:\n%s\nstderr: %s", out.String(), errb.String())
			}
			if l := listing(t, work); len(l) != 0 {
				t.Errorf("left behind: %v", l)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestObserveBuiltinSeesTheBenchmarkProcess(t *testing.T) {
	work := t.TempDir()
	rec := filepath.Join(work, "obs.json")
	// 2048 sequential 4 KiB writes from 2 threads, then an fsync of each file.
	r := run(t, work, "observe", "--interval", "100ms", "--json", rec, "fileio",
		"--rw", "write", "--size", "8m", "--files", "2", "--threads", "2", "--ops", "2048", "--end-fsync")
	if r.code != 0 {
		t.Fatalf("observe fileio failed (%d): %s", r.code, r.stderr)
	}
	got, err := model.Load(rec)
	if err != nil {
		t.Fatal(err)
	}
	writes, syncs := opCount(got, "write"), opCount(got, "fsync")
	if writes != 2048 || syncs != 2 {
		t.Fatalf("result: %d writes, %d fsyncs; want 2048 and 2", writes, syncs)
	}
	p := got.Observation.Totals.Process
	// The window covers the measured phase only: prepare's writes are not in it.
	if p.WChar < 2048*4096 || p.WChar > 2048*4096+64<<10 {
		t.Errorf("observed wchar %d, want the 8 MiB written (prepare excluded)", p.WChar)
	}
	if p.SyscW < 2048 {
		t.Errorf("observed %d write calls, want at least 2048", p.SyscW)
	}
	if p.Threads < 2 {
		t.Errorf("observed %d threads, want at least the 2 workers", p.Threads)
	}
	if got.Host.Storage == nil || len(got.Host.Storage.Disks) == 0 && got.Host.Storage.FSType != "tmpfs" {
		t.Errorf("no storage description for the benchmark directory: %+v", got.Host.Storage)
	}
	if len(got.Target.Notices) == 0 || !strings.Contains(strings.Join(got.Target.Notices, "\n"), "end") {
		t.Errorf("the end fsync is not announced: %v", got.Target.Notices)
	}
	if l := listing(t, work); len(l) != 1 {
		t.Errorf("left behind: %v", l)
	}
	agrees(t, rec)
}

// mountTmpfs mounts a small tmpfs (root only) and unmounts it when the test ends.
func mountTmpfs(t *testing.T, opts string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v): needs root", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

func TestFullDiskAndReadOnlyDirGiveClearErrors(t *testing.T) {
	small := mountTmpfs(t, "size=1m")
	ro := mountTmpfs(t, "size=1m")
	if err := syscall.Mount("", ro, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Skipf("cannot remount read-only: %v", err)
	}
	work := t.TempDir()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"fileio larger than the disk", []string{"bench", "fileio", "--dir", small, "--size", "4m", "--ops", "10"}, "free"},
		// SQLite runs out of space in the middle of the insert phase.
		{"sqlite fills the disk", []string{"bench", "sqlite", "--dir", small, "--rows", "20000", "--sync", "off", "--journal", "memory"}, "full"},
		{"fileio read-only dir", []string{"bench", "fileio", "--dir", ro, "--size", "64k", "--ops", "10"}, ro},
		{"sqlite read-only dir", []string{"bench", "sqlite", "--dir", ro, "--rows", "10"}, ro},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			line := oneError(t, run(t, work, c.args...))
			if !strings.Contains(strings.ToLower(line), strings.ToLower(c.want)) {
				t.Errorf("error %q does not mention %q", line, c.want)
			}
			for _, d := range []string{small, ro, work} {
				if l := listing(t, d); len(l) != 0 {
					t.Errorf("left behind in %s: %v", d, l)
				}
			}
		})
	}
}

// opCount is the count of one fileio op type in a run record (0 if absent).
func opCount(run *model.Run, op string) int64 {
	for _, o := range run.Result.FileIO.Ops {
		if o.Op == op {
			return o.Count
		}
	}
	return 0
}

func TestDoctorSaysWhatItCanSee(t *testing.T) {
	work := t.TempDir()
	r := run(t, work, "doctor", "--json")
	if r.code != 0 {
		t.Fatalf("doctor failed (%d): %s", r.code, r.stderr)
	}
	var out struct {
		Host   model.Host `json:"host"`
		Checks []struct{ Name, Status, Detail, Fix string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("doctor --json is not JSON: %v\n%s", err, r.stdout)
	}
	seen := map[string]string{}
	for _, c := range out.Checks {
		if c.Status != "ok" && c.Status != "missing" && c.Status != "degraded" {
			t.Errorf("check %s has status %q", c.Name, c.Status)
		}
		if c.Detail == "" {
			t.Errorf("check %s says nothing", c.Name)
		}
		seen[c.Name] = c.Status
	}
	for _, name := range []string{"privileges", "kernel_btf", "time_accounting", "delay_accounting"} {
		if _, ok := seen[name]; !ok {
			t.Errorf("doctor has no %s check", name)
		}
	}
	// Root on a kernel with BTF (CI) must be able to account time by cause.
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err == nil && os.Geteuid() == 0 && seen["time_accounting"] == "missing" {
		t.Errorf("root with kernel BTF, yet time accounting is missing")
	}
	if out.Host.CPUsOnline < 1 {
		t.Errorf("host facts missing: %+v", out.Host)
	}
	text := run(t, work, "doctor")
	if text.code != 0 || !strings.Contains(text.stdout, "time_accounting") {
		t.Errorf("doctor text view lacks time_accounting (%d):\n%s", text.code, text.stdout)
	}
}

// Without root there is no eBPF: observe falls back to /proc and says so,
// and doctor says what is missing and what to do.
func TestWithoutRootObserveFallsBackAndSaysSo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run perfsleuth as another user")
	}
	const nobody = 65534
	// t.TempDir's parent is private to root: make a directory nobody can use.
	work, err := os.MkdirTemp("", "perfsleuth-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) })
	for _, d := range []string{work, filepath.Dir(binary)} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	nobodyCred := &syscall.Credential{Uid: nobody, Gid: nobody}
	r := runAs(t, nobodyCred, work, "observe", "--interval", "100ms", "--", "sh", "-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done")
	if r.code != 0 {
		t.Fatalf("observe as nobody failed (%d): %s", r.code, r.stderr)
	}
	for _, want := range []string{"where the time goes (procfs", "not root", "unknown"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("observe as nobody does not say %q:\n%s", want, r.stderr)
		}
	}
	d := runAs(t, nobodyCred, work, "doctor")
	if d.code != 0 || !strings.Contains(d.stdout, "time_accounting: not root") {
		t.Errorf("doctor as nobody (%d) does not say time accounting needs root:\n%s", d.code, d.stdout)
	}
}

// A command that daemonises (leaves a process of its tree running when it
// exits) is observed until it exits, and the report says what it left.
func TestObserveCommandThatLeavesAProcessRunning(t *testing.T) {
	work := t.TempDir()
	r := run(t, work, "observe", "--interval", "100ms", "--", "sh", "-c", "sleep 3 </dev/null >/dev/null 2>&1 & echo $! > daemon.pid")
	if r.code != 0 {
		t.Fatalf("observe failed (%d): %s", r.code, r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(work, "daemon.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid := strings.TrimSpace(string(b))
	t.Cleanup(func() {
		if n, err := strconv.Atoi(pid); err == nil {
			syscall.Kill(n, syscall.SIGKILL)
		}
	})
	if !strings.Contains(r.stderr, "where the time goes (ebpf") {
		t.Skipf("no eBPF accounting here: leftRunning needs it\n%s", r.stderr)
	}
	if flat := strings.Join(strings.Fields(r.stderr), " "); !strings.Contains(flat, "left 1 process(es) of its tree running: pid "+pid+" (sleep)") {
		t.Errorf("the report does not name pid %s (sleep) as left running:\n%s", pid, r.stderr)
	}
}

// Two perfsleuth instances observing two commands at once: each ends with
// its own workload and says the other ran beside it, and delay accounting,
// turned on by the first, stays on until the last ends and is then as it
// was before either.
func TestTwoInstancesAtOnce(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: eBPF, and kernel.task_delayacct")
	}
	sysctl := func() string {
		b, _ := os.ReadFile("/proc/sys/kernel/task_delayacct")
		return strings.TrimSpace(string(b))
	}
	before := sysctl()
	work := t.TempDir()
	// A spins until the test says stop, so B begins and ends inside it.
	a := exec.Command(binary, "observe", "--interval", "100ms", "--json", "a.json", "--", "sh", "-c", "while [ ! -e stop ]; do :; done")
	a.Dir = work
	var aErr bytes.Buffer
	a.Stderr = &aErr
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	aDone := make(chan error, 1)
	go func() { aDone <- a.Wait() }()
	t.Cleanup(func() {
		os.WriteFile(filepath.Join(work, "stop"), nil, 0o644)
		a.Process.Signal(syscall.SIGINT)
	})
	// A's workload runs once its probes are attached: then its shell is
	// a child of it.
	deadline := time.Now().Add(time.Minute)
	for {
		out, _ := exec.Command("pgrep", "-P", strconv.Itoa(a.Process.Pid), "-x", "sh").Output()
		if len(out) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("A's workload did not start in a minute: %s", aErr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	b := run(t, work, "observe", "--interval", "100ms", "--json", "b.json", "--", "dd", "if=/dev/zero", "of=b.data", "bs=4k", "count=200", "oflag=dsync")
	if b.code != 0 {
		t.Fatalf("B failed (%d): %s", b.code, b.stderr)
	}
	select {
	case err := <-aDone:
		t.Fatalf("A ended before it was told to (%v): %s", err, aErr.String())
	default:
	}
	if before == "0" && sysctl() != "1" {
		t.Error("B turned kernel.task_delayacct off while A still observed")
	}
	if err := os.WriteFile(filepath.Join(work, "stop"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-aDone; err != nil {
		t.Fatalf("A failed (%v): %s", err, aErr.String())
	}
	if got := sysctl(); got != before {
		t.Errorf("kernel.task_delayacct is %s after both, was %s", got, before)
	}
	if _, err := os.Stat("/run/perfsleuth/delayacct"); !os.IsNotExist(err) {
		t.Errorf("the delay accounting users file is left: %v", err)
	}
	for name, comms := range map[string][2]string{"a.json": {"sh", "dd"}, "b.json": {"dd", "sh"}} {
		own, other := comms[0], comms[1]
		r, err := model.Load(filepath.Join(work, name))
		if err != nil {
			t.Fatal(err)
		}
		if flat := strings.Join(r.Warnings, "\n"); !strings.Contains(flat, "another perfsleuth ran beside this one: pid ") {
			t.Errorf("%s does not say another perfsleuth ran beside it:\n%s", name, flat)
		}
		ta := r.TimeAccounting
		if ta == nil || len(ta.Threads) == 0 {
			t.Fatalf("%s has no time accounting", name)
		}
		seen := false
		for _, th := range ta.Threads {
			seen = seen || th.Comm == own
			if th.Comm == other {
				t.Errorf("%s holds thread %d (%s) of the other instance's workload", name, th.TID, th.Comm)
			}
		}
		if !seen {
			t.Errorf("%s has no thread of its workload (%s)", name, own)
		}
		if before == "0" && ta.Source == "ebpf" && (ta.Kernel == nil || ta.Kernel.DelayAcct != "turned_on") {
			t.Errorf("%s: delay accounting %+v, want turned_on by perfsleuth", name, ta.Kernel)
		}
	}
}

// TestBenchAge: bench age runs, prints both writes, saves its own JSON
// where --json says and leaves nothing else behind.
func TestBenchAge(t *testing.T) {
	work, out := t.TempDir(), t.TempDir()
	res := filepath.Join(out, "age.json")
	r := run(t, work, "bench", "age", "--dir", work, "--area", "2m", "--small", "6k", "--delete", "50%", "--write", "1m", "--json", res)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"bench age:", "fresh", "aged", "amplification", "extents", "the device's own writes: not read"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the output does not say %q:\n%s", want, r.stdout)
		}
	}
	var got struct {
		Files int64 `json:"files"`
		Fresh struct {
			AppBytes    int64 `json:"app_bytes"`
			DeviceBytes int64 `json:"device_bytes"`
		} `json:"fresh"`
		Aged struct {
			AppBytes int64 `json:"app_bytes"`
		} `json:"aged"`
	}
	b, err := os.ReadFile(res)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%s: %v", res, err)
	}
	if got.Files < 1 || got.Fresh.AppBytes != 1<<20 || got.Aged.AppBytes != 1<<20 || got.Fresh.DeviceBytes < 1<<20 {
		t.Errorf("result %+v: want small files, 1 MiB written fresh and aged, and at least that on the device", got)
	}
	if l := listing(t, work); len(l) != 0 {
		t.Errorf("left behind: %v", l)
	}
}
