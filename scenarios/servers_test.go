package scenarios

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/report/rows"
	"github.com/perfsleuth/perfsleuth/internal/sqlnorm"
)

// Issue 18's matrix of real software: each server is started by hand in a
// temporary directory on a unix socket, observed with its client as one
// workload (observe -p SERVER -- CLIENT), stopped and removed. .ci/run
// installs the packages; a test skips, saying which, only where one is
// missing.

// serverDir is a temporary directory owned by uid, removed at the test's
// end (after the server's own cleanup, registered later, has stopped it).
func serverDir(t *testing.T, uid, gid int) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "perfsleuth-server-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	return dir
}

// waitFor waits up to 30 s for path to exist (a server's socket).
func waitFor(t *testing.T, path string, srv *exec.Cmd) {
	t.Helper()
	for range 300 {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if srv != nil && srv.ProcessState != nil {
			t.Fatalf("the server exited before making %s", path)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no %s after 30s", path)
}

// startServer starts a server in the background, stopped (SIGTERM, then
// SIGKILL after 10 s) at the test's end.
func startServer(t *testing.T, cmd *exec.Cmd, log string) {
	t.Helper()
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); f.Close(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
}

// run runs a setup command, failing the test with its output.
func run(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	return string(out)
}

// observeServer runs perfsleuth observe -p pid -- client..., and returns
// the record, the report and the client's own stdout, which perfsleuth
// leaves the client's.
func observeServer(t *testing.T, dir string, pid int, client ...string) (*model.Run, string, string) {
	t.Helper()
	rec := filepath.Join(t.TempDir(), "run.json")
	report := filepath.Join(t.TempDir(), "report.txt")
	args := []string{"observe", "--interval", "200ms", "--json", rec, "--output", report}
	if pid != 0 {
		args = append(args, "-p", strconv.Itoa(pid))
	}
	args = append(append(args, "--"), client...)
	stdout, stderr, status := perfsleuth(t, dir, args...)
	if status != 0 {
		t.Fatalf("perfsleuth %s: exit status %d\n%s\n%s", strings.Join(args, " "), status, stdout, stderr)
	}
	text, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	r := loadRecord(t, rec)
	if r.TimeAccounting == nil || r.TimeAccounting.Source != "ebpf" {
		t.Skip("no eBPF time accounting here: the server and its client cannot be told apart")
	}
	if strings.Contains(stdout, "where the time goes") {
		t.Errorf("perfsleuth's report is on the client's stdout:\n%s", stdout)
	}
	return r, string(text), stdout
}

// reported is the record's figure named name (of job, "" for the whole
// run), failing without it.
func reported(t *testing.T, r *model.Run, job, name string) float64 {
	t.Helper()
	if r.Result == nil || r.Result.Command == nil || r.Result.Command.Reported == nil {
		t.Fatal("the record holds no result the program reported")
	}
	for _, m := range r.Result.Command.Reported.Metrics {
		if m.Job == job && m.Name == name {
			return m.Value
		}
	}
	t.Fatalf("no %q of %q among %+v", name, job, r.Result.Command.Reported.Metrics)
	return 0
}

// printed is the number the regex's first group finds in out.
func printed(t *testing.T, out string, re *regexp.Regexp) float64 {
	t.Helper()
	m := re.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("%v not in the client's output:\n%s", re, out)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// sameFigure: the record's figure is the one the tool printed.
func sameFigure(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Errorf("%s: the record says %v, the tool printed %v", what, got, want)
	}
}

// cpuVerdictNamesBoth: a server and its client saturating 2 CPUs are
// CPU-bound or CPU-starved together, and the verdict gives each its share
// of the CPU time.
func cpuVerdictNamesBoth(t *testing.T, r *model.Run, server, client string) {
	t.Helper()
	v := r.Verdict
	if v.Primary != model.CatCPU && v.Primary != model.CatCPUWait {
		t.Errorf("verdict %q (%s): want CPU-bound or CPU-starved, server and client sharing 2 CPUs", v.Summary, v.Primary)
		return
	}
	if !strings.Contains(v.Summary, "the CPU time went to") || !strings.Contains(v.Summary, server+" ") || !strings.Contains(v.Summary, client+" ") {
		t.Errorf("verdict %q does not give %s's and %s's shares of the CPU time", v.Summary, server, client)
	}
	_, programs := rows.Roles(r.TimeAccounting)
	names := map[string]bool{}
	for _, p := range programs {
		names[p.Name] = p.CPUShare > 0
	}
	if !names[server] || !names[client] {
		t.Errorf("programs %+v: want %s and %s, each with CPU time", programs, server, client)
	}
}

// pgBin is the directory of PostgreSQL's server programs.
func pgBin(t *testing.T) string {
	t.Helper()
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i]
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p)
	}
	t.Skip("PostgreSQL not installed (.ci/run installs it: apt-get install postgresql)")
	return ""
}

// pgCluster starts a throwaway PostgreSQL cluster, initialised for
// pgbench at scale 1, as the postgres user (or nobody) in a directory of
// the test's; it is stopped when the test ends. It returns the directory
// (the socket's too), the postmaster's pid and pgbench's path.
func pgCluster(t *testing.T) (dir string, postmaster int, pgbench string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("not root: no eBPF, and PostgreSQL needs a user of its own")
	}
	bindir := pgBin(t)
	u, err := user.Lookup("postgres")
	if err != nil {
		if u, err = user.Lookup("nobody"); err != nil {
			t.Skip("no postgres or nobody user to run PostgreSQL as (it refuses root)")
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	dir = serverDir(t, uid, gid)
	as := func(name string, args ...string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(bindir, name), args...)
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		return cmd
	}
	data := filepath.Join(dir, "data")
	run(t, as("initdb", "-D", data, "-U", "bench", "--auth=trust", "--no-sync"))
	run(t, as("pg_ctl", "-D", data, "-o", "-k "+dir+" -c listen_addresses=''", "-l", filepath.Join(dir, "log"), "-w", "start"))
	t.Cleanup(func() { as("pg_ctl", "-D", data, "-m", "immediate", "-w", "stop").Run() })
	pgbench = filepath.Join(bindir, "pgbench")
	if _, err := os.Stat(pgbench); err != nil {
		if pgbench, err = exec.LookPath("pgbench"); err != nil {
			t.Skip("pgbench not installed (.ci/run installs it: apt-get install postgresql-contrib)")
		}
	}
	run(t, exec.Command(pgbench, "-i", "-q", "-s", "1", "-h", dir, "-U", "bench", "postgres"))
	pidFile, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	postmaster, err = strconv.Atoi(strings.SplitN(string(pidFile), "\n", 2)[0])
	if err != nil {
		t.Fatalf("postmaster.pid: %v", err)
	}
	return dir, postmaster, pgbench
}

// TestPgbenchWithServer: pgbench against a throwaway PostgreSQL cluster,
// observed together. The record's tps is pgbench's, its backends are
// named by their titles and grouped as one role, the verdict gives each
// side's share of the CPUs, and the WAL segments are named as they ended
// (not xlogtemp.N). Observed alone, pgbench's waits are named after the
// server's backends and their parent, the postmaster.
func TestPgbenchWithServer(t *testing.T) {
	dir, postmaster, pgbench := pgCluster(t)
	client := []string{pgbench, "-h", dir, "-U", "bench", "-c", "4", "-j", "1", "-T", "3", "-r", "postgres"}

	r, text, out := observeServer(t, dir, postmaster, client...)
	sameFigure(t, "tps", reported(t, r, "", "tps"), printed(t, out, regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)))
	if n := len(r.Result.Command.Reported.Metrics); n < 8 {
		t.Errorf("%d figures read: want tps, latency and each statement's latency (-r)", n)
	}
	roles, _ := rows.Roles(r.TimeAccounting)
	backends := 0
	for _, role := range roles {
		if role.Name == "postgres: backend" {
			backends = role.Threads
		}
	}
	if backends < 4 {
		t.Errorf("roles %+v: want the 4 connections' backends as one role, postgres: backend", roles)
	}
	titled := false
	for _, th := range r.TimeAccounting.Threads {
		titled = titled || strings.HasPrefix(th.Title, "postgres: ")
	}
	if !titled || !strings.Contains(text, "postgres: backend") || !strings.Contains(text, "CPU time by program:") {
		t.Errorf("no PostgreSQL title, role or share line in the report:\n%s", text)
	}
	cpuVerdictNamesBoth(t, r, "postgres", "pgbench")
	for _, f := range r.TimeAccounting.SyncedFiles {
		if strings.HasPrefix(filepath.Base(f.Path), "xlogtemp.") && !f.Gone {
			t.Errorf("synced file %s: a WAL segment under its temporary name, not the one it ended with", f.Path)
		}
	}

	// pgbench alone: what ended its sleeps is the backends, children of
	// the postmaster, and the postmaster itself. Its waits for a CPU
	// name whoever held the CPU, which on a shared machine may be
	// another server's postgres (another cluster running beside the
	// test's named its backends, of another postmaster, at each run).
	r, _, _ = observeServer(t, dir, 0, client...)
	parents := map[int]bool{}
	for _, w := range r.TimeAccounting.Waits {
		if w.Category == model.CatSleep && w.Waker == model.WakerOutside && w.WakerComm == "postgres" && w.WakerPID != postmaster {
			parents[w.WakerPPID] = true
		}
	}
	if !parents[postmaster] || len(parents) != 1 {
		t.Errorf("outside wakers named postgres that ended pgbench's sleeps, the postmaster aside, have parents %v, want the postmaster %d alone", parents, postmaster)
	}
	// Asleep until a backend answers, or waiting for the CPUs the
	// backends hold: either way the verdict says to observe the server.
	t.Logf("pgbench alone: %s", r.Verdict.Summary)
	if v := r.Verdict; (v.Primary == model.CatSleep || v.Primary == model.CatCPUWait) && !strings.Contains(v.Summary, fmt.Sprintf("-p %d", postmaster)) {
		t.Errorf("verdict %q: want it to name the postmaster (-p %d)", v.Summary, postmaster)
	}
}

// TestRedisBenchmarkWithServer: redis-benchmark against a redis-server of
// its own: each test's requests/s as it printed them, and the verdict
// gives each side's share of the CPUs.
func TestRedisBenchmarkWithServer(t *testing.T) {
	needTool(t, "redis-server")
	needTool(t, "redis-benchmark")
	dir := serverDir(t, 0, 0)
	sock := filepath.Join(dir, "redis.sock")
	srv := exec.Command("redis-server", "--port", "0", "--unixsocket", sock, "--dir", dir, "--save", "", "--appendonly", "no")
	srv.Dir = dir
	startServer(t, srv, filepath.Join(dir, "log"))
	waitFor(t, sock, srv)
	r, _, out := observeServer(t, dir, srv.Process.Pid, "redis-benchmark", "-s", sock, "-n", "40000", "-c", "4", "-q", "-t", "set,get")
	for _, test := range []string{"SET", "GET"} {
		sameFigure(t, test+" requests/s", reported(t, r, test, "requests/s"),
			printed(t, out, regexp.MustCompile(`(?:^|[\r\n])`+test+`: ([0-9.]+) requests per second`)))
	}
	cpuVerdictNamesBoth(t, r, "redis-server", "redis-benchmark")
}

// TestSysbenchOLTPWithMariaDB: sysbench oltp_write_only against a MariaDB
// server of its own: the record's tps is sysbench's, and the server's
// threads are in the accounting beside the client's.
func TestSysbenchOLTPWithMariaDB(t *testing.T) {
	needTool(t, "sysbench")
	needTool(t, "mariadbd")
	needTool(t, "mariadb-install-db")
	needTool(t, "mariadb")
	if os.Geteuid() != 0 {
		t.Skip("not root: no eBPF")
	}
	dir := serverDir(t, 0, 0)
	data, sock := filepath.Join(dir, "data"), filepath.Join(dir, "sock")
	run(t, exec.Command("mariadb-install-db", "--no-defaults", "--datadir="+data, "--user=root", "--auth-root-authentication-method=normal", "--skip-test-db"))
	srv := exec.Command("mariadbd", "--no-defaults", "--datadir="+data, "--socket="+sock, "--skip-networking", "--user=root",
		"--pid-file="+filepath.Join(dir, "pid"), "--innodb-buffer-pool-size=64M", "--log-error="+filepath.Join(dir, "err.log"))
	startServer(t, srv, filepath.Join(dir, "log"))
	waitFor(t, sock, srv)
	run(t, exec.Command("mariadb", "-S", sock, "-u", "root", "-e", "create database sbtest"))
	sb := []string{"sysbench", "oltp_write_only", "--db-driver=mysql", "--mysql-socket=" + sock, "--mysql-user=root", "--tables=2", "--table-size=2000"}
	run(t, exec.Command(sb[0], append(sb[1:], "prepare")...))
	r, _, out := observeServer(t, dir, srv.Process.Pid, append(sb, "--threads=4", "--time=3", "run")...)
	sameFigure(t, "transactions/s", reported(t, r, "", "transactions/s"), printed(t, out, regexp.MustCompile(`transactions:\s+\d+\s+\(([0-9.]+) per sec\.\)`)))
	_, programs := rows.Roles(r.TimeAccounting)
	names := map[string]bool{}
	for _, p := range programs {
		names[p.Name] = true
	}
	if !names["mariadbd"] || !names["sysbench"] {
		t.Errorf("programs %+v: want mariadbd and sysbench", programs)
	}
	if v := r.Verdict; v.Primary == model.CatCPU || v.Primary == model.CatCPUWait {
		cpuVerdictNamesBoth(t, r, "mariadbd", "sysbench")
	}
}

// TestPgbenchStatements: pgbench observed with --sql and the server's
// postmaster (-p): each of pgbench's statements is named (its literals as
// ?, as pgbench's own -r report names them with :variables), its mean time
// in the server is within what pgbench measured for it (which adds the
// round trip), and the commits (END) carry the WAL syncs of the backends.
// By both of PostgreSQL's protocols: simple (the text with its values, one
// Query message: exec_simple_query) and extended (Parse with $1 and
// Bind/Execute: exec_execute_message). Both report the text running
// through pgstat_report_activity, which the probe hooks.
func TestPgbenchStatements(t *testing.T) {
	dir, postmaster, pgbench := pgCluster(t)
	for _, mode := range []string{"simple", "extended"} {
		t.Run(mode, func(t *testing.T) { pgbenchStatements(t, dir, postmaster, pgbench, mode) })
	}
}

func pgbenchStatements(t *testing.T, dir string, postmaster int, pgbench, mode string) {
	rec := filepath.Join(t.TempDir(), "run.json")
	args := []string{"observe", "--sql", "--interval", "200ms", "--json", rec, "-p", strconv.Itoa(postmaster), "--",
		pgbench, "-h", dir, "-U", "bench", "-M", mode, "-c", "4", "-j", "1", "-T", "3", "-r", "postgres"}
	if stdout, stderr, status := perfsleuth(t, dir, args...); status != 0 {
		t.Fatalf("perfsleuth %s: exit status %d\n%s\n%s", strings.Join(args, " "), status, stdout, stderr)
	}
	r := loadRecord(t, rec)
	if r.Storage == nil || r.Storage.SQLite == nil || r.Storage.SQLite.SQL == nil {
		t.Fatalf("no statements in the record: warnings %v", r.Warnings)
	}
	q := r.Storage.SQLite.SQL
	byText := statementsByText(q)
	// pgbench's statements are each the backend's own: their executors
	// are not taken for nested statements.
	for _, s := range q.Statements {
		if s.NestedIn != "" {
			t.Errorf("%s: inside %q, want top level", s.Text, s.NestedIn)
		}
	}
	var tx float64
	checked := 0
	for _, m := range r.Result.Command.Reported.Metrics {
		if m.Name == "tps" && m.Job == "" {
			tx = m.Value * 3
		}
		// pgbench's meta-commands (\set) run in pgbench, not the server.
		if m.Name != "statement latency" || strings.HasPrefix(m.Job, "\\") {
			continue
		}
		text := sqlnorm.Normalize(m.Job, sqlnorm.MaxLen)
		s := byText[text]
		if s == nil || s.Done == 0 {
			t.Errorf("pgbench's statement %q (%s) is not among the statements observed", m.Job, text)
			continue
		}
		// Each statement of pgbench's script runs once a transaction:
		// the extended protocol's Parse, Bind and Execute are one
		// execution, not three.
		if d := float64(s.Done); tx > 0 && (d < 0.7*tx || d > 1.3*tx) {
			t.Errorf("%s: %d executions observed, pgbench made about %.0f transactions, each running it once", text, s.Done, tx)
		}
		mean := s.Sec / float64(s.Done)
		t.Logf("%-70.70s pgbench %7.3f ms, server %7.3f ms over %d, syncs %d; by state over %d: %s", text, m.Value*1e3, mean*1e3, s.Done, s.Calls.Syncs, s.TimedExecs, msByState(s.Time))
		if mean <= 0 || mean > m.Value*1.25 {
			t.Errorf("%s: %.3f ms a statement in the server, pgbench saw %.3f ms with the round trip", text, mean*1e3, m.Value*1e3)
		}
		// Each execution's time by state, from the backend's time
		// accounting at its report and the next: they add up to it.
		var states float64
		for _, v := range s.Time {
			states += v
		}
		if !timedEnough(t, text, s) {
		} else if states < 0.95*s.TimedSec || states > 1.05*s.TimedSec {
			t.Errorf("%s: its states add up to %.3f s, its %d timed executions took %.3f s", text, states, s.TimedExecs, s.TimedSec)
		}
		checked++
	}
	if checked < 7 {
		t.Errorf("%d of pgbench's statements checked, want its 7 (-r)", checked)
	}
	// All four clients update the one branch: the UPDATE waits for the
	// other transactions' row locks (for their transaction ids), which the
	// kernel sees as the backend asleep in its latch. Its lock waits are
	// named; they are most of its sleep, and within its sleep plus the
	// wait for a CPU and the run that end each (ProcSleep returns on the
	// CPU: 3.853 s of waits against 3.391 s asleep and 0.476 s waiting
	// for a CPU in one run).
	if br := byText["UPDATE pgbench_branches SET bbalance = bbalance + ? WHERE bid = ?;"]; br != nil {
		var waits int64
		var sec float64
		types := map[string]bool{}
		for _, w := range br.LockWaits {
			waits += w.Waits
			sec += w.Sec
			types[w.Type] = true
		}
		t.Logf("UPDATE pgbench_branches: %d lock waits in %.3f s (%v), %.3f s asleep", waits, sec, slices.Collect(maps.Keys(types)), br.Time[model.CatSleep])
		if waits == 0 || !types["transactionid"] {
			t.Errorf("UPDATE pgbench_branches: lock waits %+v, want waits for other transactions' ids", br.LockWaits)
		}
		sleep := br.Time[model.CatSleep]
		if within := sleep + br.Time[model.CatCPUWait] + br.Time[model.CatCPU]; sec < 0.5*sleep || sec > within*1.01+0.01 || sec > br.Sec {
			t.Errorf("UPDATE pgbench_branches: %.3f s of lock waits, %.3f s asleep, %.3f s with the CPU's, of %.3f s", sec, sleep, within, br.Sec)
		}
	}
	end := byText["END;"]
	if end == nil || float64(end.Calls.Syncs) < 0.3*tx {
		t.Errorf("END: %+v, want the commits' WAL syncs (%.0f transactions)", end, tx)
	} else if end.Time[model.CatStorageSync] <= 0 {
		t.Errorf("END: no time blocked in syncs (%s), with %d WAL syncs", msByState(end.Time), end.Calls.Syncs)
	}
	if q.CallsShare <= 0 || q.FileCalls == 0 {
		t.Errorf("calls made under a statement: %.2f of %d", q.CallsShare, q.FileCalls)
	}
	// pgbench's transaction: BEGIN, its five statements, END, in each of
	// its four backends, once per transaction pgbench counted.
	var pgtx *model.SQLTransaction
	for i, x := range q.Transactions {
		t.Logf("transaction x %d (%d statements, %d processes): %.3f ms each, p99 %.3f ms, %.2f syncs each: %q", x.Count, x.StatementCount, x.Processes, x.Sec/float64(x.Count)*1e3, x.P99Sec*1e3, float64(x.Syncs)/float64(x.Count), x.Statements)
		if x.StatementCount == 7 && x.Statements[0] == "BEGIN;" && x.Statements[6] == "END;" {
			pgtx = &q.Transactions[i]
		}
	}
	if pgtx == nil {
		t.Errorf("pgbench's transaction (BEGIN; 5 statements; END;) is not among the %d kinds", len(q.Transactions))
	} else {
		if c := float64(pgtx.Count); tx > 0 && (c < 0.7*tx || c > 1.3*tx) {
			t.Errorf("pgbench's transaction: %d observed, pgbench made about %.0f", pgtx.Count, tx)
		}
		if float64(pgtx.Syncs) < 0.3*float64(pgtx.Count) || pgtx.Processes < 2 {
			t.Errorf("pgbench's transaction: %d syncs for %d, in %d backends; want its commits' WAL syncs, in its 4 backends", pgtx.Syncs, pgtx.Count, pgtx.Processes)
		}
		if q.Transactions[0].Sec != pgtx.Sec {
			t.Errorf("pgbench's transaction (%.3f s) does not lead the transactions by time (%q: %.3f s)", pgtx.Sec, q.Transactions[0].Statements, q.Transactions[0].Sec)
		}
	}
}

// statementsByText sums the statements of a server's backends (one per
// backend in the record) by their text.
func statementsByText(q *model.SQLStatements) map[string]*model.SQLStatement {
	byText := map[string]*model.SQLStatement{}
	for i := range q.Statements {
		s := &q.Statements[i]
		if m := byText[s.Text]; m != nil {
			m.Execs += s.Execs
			m.Done += s.Done
			m.Sec += s.Sec
			m.Calls.Writes += s.Calls.Writes
			m.Calls.Syncs += s.Calls.Syncs
			m.TimedExecs += s.TimedExecs
			m.TimedSec += s.TimedSec
			m.OffCPUExecs += s.OffCPUExecs
			for k, v := range s.Time {
				m.Time[k] += v
			}
			m.LockWaits = append(m.LockWaits, s.LockWaits...)
			continue
		}
		c := *s
		c.Time = maps.Clone(s.Time)
		if c.Time == nil {
			c.Time = map[string]float64{}
		}
		byText[s.Text] = &c
	}
	return byText
}

// msByState writes a statement's time by state in ms, largest first.
func msByState(m map[string]float64) string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Compare(m[b], m[a]) })
	var out []string
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%s %.1f ms", k, m[k]*1e3))
	}
	return strings.Join(out, ", ")
}

// TestPgNestedStatements: the statements a PL/pgSQL function runs are
// named on their own, nested in the statement that called it. fill(n)
// inserts n rows one INSERT at a time and counts a table: each INSERT is
// an execution of its own (its executor started and ended), inside
// SELECT fill(...), whose time includes theirs; the table's growth (a
// write of each new page, made by the INSERT that needed it) is the
// INSERT's IO, and the commit's WAL sync the SELECT's.
func TestPgNestedStatements(t *testing.T) {
	dir, postmaster, _ := pgCluster(t)
	psql := func(sql string) []string {
		return []string{filepath.Join(pgBin(t), "psql"), "-X", "-q", "-h", dir, "-U", "bench", "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-c", sql}
	}
	setup := psql(`CREATE TABLE nest_t (id int, v text);
CREATE FUNCTION fill(n int) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1..n LOOP
    INSERT INTO nest_t VALUES (i, repeat('x', 200));
  END LOOP;
  RETURN (SELECT count(*) FROM nest_t);
END $$;`)
	run(t, exec.Command(setup[0], setup[1:]...))
	const rowsEach, calls = 5000, 4
	rec := filepath.Join(t.TempDir(), "run.json")
	script := fmt.Sprintf("for i in $(seq %d); do %s; done", calls, strings.Join(quoteAll(psql(fmt.Sprintf("SELECT fill(%d);", rowsEach))), " "))
	args := []string{"observe", "--sql", "--json", rec, "-p", strconv.Itoa(postmaster), "--", "sh", "-c", script}
	if stdout, stderr, status := perfsleuth(t, dir, args...); status != 0 {
		t.Fatalf("perfsleuth %s: exit status %d\n%s\n%s", strings.Join(args, " "), status, stdout, stderr)
	}
	r := loadRecord(t, rec)
	if r.Storage == nil || r.Storage.SQLite == nil || r.Storage.SQLite.SQL == nil {
		t.Fatalf("no statements in the record: warnings %v", r.Warnings)
	}
	// Each psql connects anew: one backend, so one of each statement, per
	// call; summed.
	var top, insert, count *model.SQLStatement
	for _, s := range statementsByText(r.Storage.SQLite.SQL) {
		t.Logf("%q inside %q: %d execs, %d done, %.3f s (%s), writes %d, syncs %d", s.Text, s.NestedIn, s.Execs, s.Done, s.Sec, msByState(s.Time), s.Calls.Writes, s.Calls.Syncs)
		switch {
		case strings.HasPrefix(s.Text, "SELECT fill("):
			top = s
		case strings.HasPrefix(s.Text, "INSERT INTO nest_t"):
			insert = s
		case strings.Contains(s.Text, "count(*) FROM nest_t"):
			count = s
		}
	}
	if top == nil || insert == nil || count == nil {
		t.Fatalf("want SELECT fill(?), and the INSERT and the count nested in it, among the statements: %+v", r.Storage.SQLite.SQL.Statements)
	}
	if top.NestedIn != "" || top.Done != calls {
		t.Errorf("SELECT fill: inside %q, %d executions ended; want top level, %d", top.NestedIn, top.Done, calls)
	}
	for _, s := range []*model.SQLStatement{insert, count} {
		if s.NestedIn != top.Text {
			t.Errorf("%s: inside %q, want %q", s.Text, s.NestedIn, top.Text)
		}
	}
	if insert.Execs != calls*rowsEach || insert.Done != insert.Execs {
		t.Errorf("INSERT: %d executions begun, %d ended; want %d, each ended", insert.Execs, insert.Done, calls*rowsEach)
	}
	if count.Done != calls {
		t.Errorf("count: %d executions, want %d", count.Done, calls)
	}
	// The calling statement's time holds its nested ones' (0.58-0.67 of
	// it here: the rest is the loop around them, the call's own parse,
	// plan and commit).
	if nested := insert.Sec + count.Sec; nested > top.Sec || nested < 0.3*top.Sec {
		t.Errorf("nested statements %.3f s inside SELECT fill's %.3f s: want within it, and a good part of it", nested, top.Sec)
	}
	// 20,000 rows of ~230 bytes fill ~650 pages of 8 KiB: each new page of
	// the table is written by the INSERT that extended it (fewer when the
	// file system extends by more than a page at once; PostgreSQL 16+
	// extends in bulk).
	if insert.Calls.Writes < 50 || insert.Calls.Writes < top.Calls.Writes {
		t.Errorf("INSERT: %d writes, SELECT fill %d: want the table's growth under the INSERT", insert.Calls.Writes, top.Calls.Writes)
	}
	if insert.Calls.Syncs != 0 {
		t.Errorf("INSERT: %d syncs, want none: the commit (the calling statement's) syncs", insert.Calls.Syncs)
	}
	if !timedEnough(t, "INSERT", insert) && r.TimeAccounting != nil {
		t.Logf("switches without an event %+v; notes %v", r.TimeAccounting.Unseen, r.Storage.SQLite.SQL.Notes)
	}
}

// timedEnough holds a statement's executions timed by state: each ended one
// is timed, or said to have run while the time accounting had its thread
// off the CPU (the kernel's sched_switch left out its switch-in: issue 14's
// series saw 14,830 and 17,307 of 20,000 INSERTs of TestPgNestedStatements
// timed, in 2 of about 60 runs, a whole fill() call's INSERTs on a backend
// whose switch-in had no event); at most a tenth for any other reason, and
// at least half timed.
func timedEnough(t *testing.T, text string, s *model.SQLStatement) bool {
	t.Helper()
	other := s.Done - s.TimedExecs - s.OffCPUExecs
	if other > s.Done/10 || s.TimedExecs < s.Done/2 {
		t.Errorf("%s: %d of %d executions timed by state, %d not timed as their thread was off the CPU in the accounting, %d for another reason", text, s.TimedExecs, s.Done, s.OffCPUExecs, other)
		return false
	}
	if s.OffCPUExecs > 0 {
		t.Logf("%s: %d of %d executions not timed: their thread's switch-in had no sched_switch event", text, s.OffCPUExecs, s.Done)
	}
	return true
}

// quoteAll quotes each argument for sh.
func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return out
}
