// Command overhead measures what observing costs: it runs the same workload
// bare and under `perfsleuth observe`, alternating, and prints the slowdown
// (1 - observed/bare throughput) per workload, the median over pairs of runs
// with its 95% bootstrap interval, against the targets of issue 3:
//
//	(a) 4 KiB buffered random writes, 1 thread (syscall-heavy)   <= 3%
//	(b) the sqlite benchmark, WAL (CPU-bound transactions)        <= 3%
//	(c) two threads ping-ponging over pipes (context switches)    <= 10%
//	(d) (a) under observe --syscalls: at most half the slowdown of the
//	    equivalent bpftrace script (per-syscall count and latency
//	    histogram for the same pid), run alternately with it
//	(g) (b) under observe --sql against (b) under observe --storage: what
//	    the statement probe's uprobes add (<= 15%)
//	(e) (a) under observe --storage and (f) (b) under observe --storage:
//	    the same rule as (d) for the other opt-in mode that hooks every
//	    syscall, against a bpftrace script keeping what --storage keeps per
//	    file (calls, bytes, size and latency histograms, sequential or
//	    random per open file). On (b) --storage also sends each SQLite
//	    call's file, offset, length and first 32 bytes to user space, so
//	    (f)'s equivalent script prints those too (bpftraceEvents); the
//	    per-file script alone is measured beside it, and the events each
//	    bpftrace run lost are counted
//
// (a), (b) and (c) include the storage probe's block-device programs and
// the page-cache ones that every eBPF observation runs (readahead, faults,
// throttling, inodes made dirty; the per-page ones run with --storage).
//
// Issue 21's, the default observation against the workload's own
// throughput, timed inside the workload, each run after a sync (--only hijk):
//
//	(h) 4 KiB appends to a new file (loops.c)                        <= 3%
//	(i) 4 KiB preads of a file in the page cache (loops.c)           <= 3%
//	(j) MariaDB (innodb_flush_log_at_trx_commit=2) + sysbench
//	    oltp_write_only, 4 threads; the server observed by -p and the
//	    client as the command, both on this machine                  <= 5%
//	(k) Redis (appendfsync everysec) + redis-benchmark SET, 4 clients <= 5%
//
// Run as root for the eBPF probes (otherwise this measures /proc sampling).
//
//	go run ./benchmarks/overhead [--repeats 7] [--duration 5s] [--only abcdefghijk]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/perfsleuth/perfsleuth/benchmarks/internal/atexit"
	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/stats"
)

type workload struct {
	name   string
	target float64 // largest acceptable slowdown
	// bare and observed return the throughput of one run.
	bare, observed func(ctx context.Context) (float64, error)
}

func main() {
	repeats := flag.Int("repeats", 7, "bare/observed pairs per workload")
	duration := flag.Duration("duration", 5*time.Second, "length of each run")
	bin := flag.String("perfsleuth", "", "perfsleuth binary (default: build ./cmd/perfsleuth)")
	interval := flag.String("interval", "1s", "observe --interval")
	only := flag.String("only", "abcdef", "which workloads to run (h-k: issue 21, the workload's own throughput)")
	flag.Parse()
	ctx := context.Background()

	tmp, err := os.MkdirTemp(".", "perfsleuth-overhead-")
	check(err)
	atexit.Add(func() { os.RemoveAll(tmp) })
	defer atexit.Run()
	tmp, _ = filepath.Abs(tmp)
	if *bin == "" {
		*bin = filepath.Join(tmp, "perfsleuth")
		run("go", "build", "-o", *bin, "./cmd/perfsleuth")
	}
	pingpong := filepath.Join(tmp, "pingpong")
	run("gcc", "-O2", "-pthread", "-o", pingpong, "scenarios/c/pingpong.c")
	d := duration.Seconds()

	perfsleuthRate := func(args []string, pick func(*model.Result) float64) func(context.Context) (float64, error) {
		return func(ctx context.Context) (float64, error) {
			rec := filepath.Join(tmp, "run.json")
			cmd := exec.CommandContext(ctx, *bin, append(args, "--json", rec)...)
			cmd.Dir = tmp
			if out, err := cmd.CombinedOutput(); err != nil {
				return 0, fmt.Errorf("%v: %v\n%s", args, err, out)
			}
			return recordRate(rec, pick)
		}
	}
	writes := func(r *model.Result) float64 { return r.FileIO.Ops[0].OpsPerSec }
	inserts := func(r *model.Result) float64 { return r.SQLite.Phases[0].TxPerSec }
	fio := []string{"fileio", "--rw", "randwrite", "--bs", "4k", "--size", "256m", "--duration", duration.String()}
	sq := []string{"sqlite", "--journal", "wal", "--sync", "normal", "--rows", strconv.Itoa(int(d * 20000)), "--phases", "insert"}
	obs := []string{"observe", "--interval", *interval}
	pp := func(observe bool) func(context.Context) (float64, error) {
		return func(ctx context.Context) (float64, error) {
			args := []string{pingpong, strconv.FormatFloat(d, 'f', 1, 64)}
			if observe {
				args = append(append(append([]string{*bin}, obs...), "--"), args...)
			}
			out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
			if err != nil {
				return 0, fmt.Errorf("%v: %v\n%s", args, err, out)
			}
			m := regexp.MustCompile(`([0-9.]+) round trips/s`).FindSubmatch(out)
			if m == nil {
				return 0, fmt.Errorf("no rate in %q", out)
			}
			return strconv.ParseFloat(string(m[1]), 64)
		}
	}
	workloads := []workload{
		{"(a) fileio 4k randwrite", 0.03, perfsleuthRate(append([]string{"bench"}, fio...), writes), perfsleuthRate(append(obs, fio...), writes)},
		{"(b) sqlite WAL inserts", 0.03, perfsleuthRate(append([]string{"bench"}, sq...), inserts), perfsleuthRate(append(obs, sq...), inserts)},
		{"(c) pipe ping-pong", 0.10, pp(false), pp(true)},
		{"(d) see below", 0, nil, nil},
		{"(e) see below", 0, nil, nil},
		{"(f) see below", 0, nil, nil},
		// --sql's own cost: its uprobes on top of --storage, which it
		// implies. Opt-in, with no equivalent tool to hold it to; 15% is
		// the bound decided for it (docs/probes.md).
		{"(g) (b) --sql vs --storage", 0.15, perfsleuthRate(append(append(obs, "--storage"), sq...), inserts), perfsleuthRate(append(append(obs, "--sql"), sq...), inserts)},
	}
	// Issue 21: the default observation against the workload's own
	// throughput, timed inside it, each run after a sync.
	if strings.ContainsAny(*only, "hi") {
		loops := filepath.Join(tmp, "loops")
		run("gcc", "-O2", "-o", loops, "benchmarks/overhead/loops.c")
		perSec := regexp.MustCompile(`([0-9.]+) ops/s`)
		secs := fmt.Sprint(d)
		workloads = append(workloads,
			workload{"(h) 4k appends, new file", 0.03, own(tmp, "", perSec, loops, "append", secs), own(tmp, *bin, perSec, loops, "append", secs)},
			workload{"(i) 4k cached preads", 0.03, own(tmp, "", perSec, loops, "cachedread", secs), own(tmp, *bin, perSec, loops, "cachedread", secs)})
	} else {
		workloads = append(workloads, workload{"(h)", 0, nil, nil}, workload{"(i)", 0, nil, nil})
	}
	if strings.ContainsRune(*only, 'j') {
		sb, pid := mariaDB(tmp)
		args := append(sb, "--threads=4", fmt.Sprintf("--time=%d", int(d)), "run")
		tps := regexp.MustCompile(`transactions:\s+\d+\s+\(([0-9.]+) per sec\.\)`)
		workloads = append(workloads, workload{"(j) MariaDB + sysbench", 0.05, own(tmp, "", tps, args...), own(tmp, *bin, tps, append([]string{"-p", strconv.Itoa(pid), "--"}, args...)...)})
	} else {
		workloads = append(workloads, workload{"(j)", 0, nil, nil})
	}
	if strings.ContainsRune(*only, 'k') {
		sock, pid := redis(tmp)
		args := []string{"redis-benchmark", "-s", sock, "-n", strconv.Itoa(int(d * 60000)), "-c", "4", "-q", "-t", "set"}
		rps := regexp.MustCompile(`SET: ([0-9.]+) requests per second`)
		workloads = append(workloads, workload{"(k) Redis + redis-benchmark", 0.05, own(tmp, "", rps, args...), own(tmp, *bin, rps, append([]string{"-p", strconv.Itoa(pid), "--"}, args...)...)})
	}
	fmt.Printf("%d pairs of %s runs per workload, observe --interval %s, euid %d\n\n", *repeats, duration, *interval, os.Geteuid())
	for i, w := range workloads {
		if !strings.ContainsRune(*only, rune('a'+i)) || w.bare == nil {
			continue
		}
		var bares, obsd []float64
		for i := 0; i < *repeats; i++ {
			// Bare first in even pairs, observed first in odd ones: a
			// run that warms (or tires) the machine for the next weighs
			// on both alike.
			var b, o float64
			var errB, errO error
			if i%2 == 0 {
				b, errB = w.bare(ctx)
				o, errO = w.observed(ctx)
			} else {
				o, errO = w.observed(ctx)
				b, errB = w.bare(ctx)
			}
			check(errB)
			check(errO)
			bares, obsd = append(bares, b), append(obsd, o)
		}
		slow, lo, hi, verdict := judge(bares, obsd, w.target)
		fmt.Printf("%-26s bare %10.0f/s  observed %10.0f/s  slowdown %5.1f%% [%.1f%%, %.1f%%]  (target <= %.0f%%) %s\n",
			w.name, stats.Median(bares), stats.Median(obsd), slow*100, lo*100, hi*100, w.target*100, verdict)
	}
	bt, err := exec.LookPath("bpftrace")
	if err != nil {
		fmt.Println("(d), (e), (f) skipped: no bpftrace (apt-get install bpftrace)")
		return
	}
	// bpftrace finds tracepoints through tracefs, which a fresh machine may
	// not have mounted (perfsleuth's tp_btf programs do not need it).
	if _, err := os.Stat("/sys/kernel/tracing/events/raw_syscalls"); err != nil {
		fmt.Println("(d), (e), (f) skipped: bpftrace needs tracefs: mount -t tracefs nodev /sys/kernel/tracing")
		return
	}
	// bpftrace runs a workload under a script; pick reads its rate. The
	// script's output (its maps, the events it prints) goes to a file, and
	// the events its perf buffer lost are counted from it.
	bpftrace := func(args []string, pick func(*model.Result) float64, script string, lost *int64) func(ctx context.Context) (float64, error) {
		return func(ctx context.Context) (float64, error) {
			rec, out := filepath.Join(tmp, "run.json"), filepath.Join(tmp, "bpftrace.out")
			cmd := exec.CommandContext(ctx, bt, "-o", out, "-c", strings.Join(append(append([]string{*bin, "bench"}, args...), "--json", rec), " "), "-e", script)
			cmd.Dir = tmp
			// 4 MiB of perf buffer per CPU, as much as --storage's ring
			// buffer has in all: bpftrace's default (64 pages) loses most
			// of the SQLite events.
			cmd.Env = append(os.Environ(), "BPFTRACE_PERF_RB_PAGES=1024")
			if b, err := cmd.CombinedOutput(); err != nil {
				return 0, fmt.Errorf("bpftrace: %v\n%s", err, b)
			}
			*lost += lostEvents(out)
			return recordRate(rec, pick)
		}
	}
	// Each opt-in mode is held to half the slowdown of the first script, the
	// equivalent one; the others are measured alongside for comparison.
	type script struct{ name, text string }
	triples := []struct {
		id, name, flag string
		args           []string
		pick           func(*model.Result) float64
		scripts        []script
	}{
		{"d", "(d) (a) with --syscalls", "--syscalls", fio, writes, []script{{"per-syscall", bpftraceSyscalls}}},
		{"e", "(e) (a) with --storage", "--storage", fio, writes, []script{{"per-file", bpftraceFiles}}},
		{"f", "(f) (b) with --storage", "--storage", sq, inserts, []script{{"per-file + SQLite events", bpftraceEvents}, {"per-file only", bpftraceFiles}}},
	}
	for _, x := range triples {
		if !strings.ContainsRune(*only, rune(x.id[0])) {
			continue
		}
		bare := perfsleuthRate(append([]string{"bench"}, x.args...), x.pick)
		ours := perfsleuthRate(append(append(obs, x.flag), x.args...), x.pick)
		lost := make([]int64, len(x.scripts))
		var theirs []func(context.Context) (float64, error)
		for i, sc := range x.scripts {
			theirs = append(theirs, bpftrace(x.args, x.pick, sc.text, &lost[i]))
		}
		var ro, bs, os_ []float64
		rb := make([][]float64, len(x.scripts))
		bts := make([][]float64, len(x.scripts))
		for range *repeats {
			b, err := bare(ctx)
			check(err)
			o, err := ours(ctx)
			check(err)
			bs, os_, ro = append(bs, b), append(os_, o), append(ro, o/b)
			for i, th := range theirs {
				t, err := th(ctx)
				check(err)
				bts[i], rb[i] = append(bts[i], t), append(rb[i], t/b)
			}
		}
		slowO, slowB := 1-stats.Median(ro), 1-stats.Median(rb[0])
		verdict := "PASS"
		if slowO > slowB/2 {
			verdict = "FAIL"
		}
		fmt.Printf("%-26s bare %10.0f/s  %s %10.0f/s (%5.1f%%)\n", x.name, stats.Median(bs), x.flag, stats.Median(os_), slowO*100)
		for i, sc := range x.scripts {
			fmt.Printf("%-26s bpftrace %s: %10.0f/s (%5.1f%%), %d events lost", "", sc.name, stats.Median(bts[i]), (1-stats.Median(rb[i]))*100, lost[i])
			if i == 0 {
				fmt.Printf("  target: <= half of this: %s", verdict)
			}
			fmt.Println()
		}
	}
}

// judge is the slowdown of the observed runs against the bare ones made
// beside them, pair by pair (the median of the pairs' slowdowns), its 95%
// bootstrap interval over the pairs, and what it says of the target: PASS
// when the whole interval is within it, FAIL when the whole interval is
// beyond it, and otherwise that the pairs cannot tell (the machine's noise
// is as large as the difference): a median alone on a shared machine has
// passed and failed the same binary from one invocation to the next.
func judge(bare, observed []float64, target float64) (slow, lo, hi float64, verdict string) {
	p := stats.PairedRounds(bare, observed, func(b, o float64) float64 { return o/b - 1 }, 1)
	slow, lo, hi = -p.Change, -p.Interval[1], -p.Interval[0]
	switch {
	case hi <= target:
		verdict = "PASS"
	case lo > target:
		verdict = "FAIL"
	default:
		verdict = "NOT SETTLED: the interval reaches past the target; use more --repeats or a quieter machine"
	}
	return slow, lo, hi, verdict
}

// lostEvents sums bpftrace's "Lost N events" lines in its output file.
func lostEvents(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	var n int64
	for _, m := range regexp.MustCompile(`(?m)^Lost (\d+) events`).FindAllSubmatch(b, -1) {
		v, _ := strconv.ParseInt(string(m[1]), 10, 64)
		n += v
	}
	return n
}

// bpftraceSyscalls is the bpftrace equivalent of --syscalls for one process
// (its pid is cpid, the command bpftrace -c starts): a count and a log2
// latency histogram per syscall.
const bpftraceSyscalls = `tracepoint:raw_syscalls:sys_enter /pid == cpid/ { @start[tid] = nsecs; }
tracepoint:raw_syscalls:sys_exit /pid == cpid && @start[tid]/ {
	@count[args->id] = count();
	@lat[args->id] = hist(nsecs - @start[tid]);
	delete(@start[tid]);
}`

// bpftraceFiles is the bpftrace equivalent of --storage's per-file view for
// one process, for the calls (a) and (b) make: per file (inode) and call,
// a count, bytes, log2 size and latency histograms, and per open file
// whether each call began where the previous one ended.
const bpftraceFiles = `tracepoint:syscalls:sys_enter_pwrite64,tracepoint:syscalls:sys_enter_pread64 /pid == cpid/ {
	@fd[tid] = args->fd; @off[tid] = args->pos; @start[tid] = nsecs;
}
tracepoint:syscalls:sys_enter_write,tracepoint:syscalls:sys_enter_read /pid == cpid/ {
	@fd[tid] = args->fd; @off[tid] = (*(curtask->files->fdt->fd + args->fd))->f_pos; @start[tid] = nsecs;
}
tracepoint:syscalls:sys_enter_fsync,tracepoint:syscalls:sys_enter_fdatasync /pid == cpid/ {
	@fd[tid] = args->fd; @start[tid] = nsecs;
}
tracepoint:syscalls:sys_exit_pwrite64,tracepoint:syscalls:sys_exit_pread64,tracepoint:syscalls:sys_exit_write,tracepoint:syscalls:sys_exit_read,tracepoint:syscalls:sys_exit_fsync,tracepoint:syscalls:sys_exit_fdatasync /pid == cpid && @start[tid]/ {
` + bpftraceFileStats + `	delete(@start[tid]);
}`

// bpftraceFileStats is what both scripts keep per file at a call's exit.
const bpftraceFileStats = `	$f = *(curtask->files->fdt->fd + @fd[tid]);
	$ino = $f->f_inode->i_ino;
	@calls[$ino, probe] = count();
	@bytes[$ino, probe] = sum(args->ret);
	@size[$ino, probe] = hist(args->ret);
	@lat[$ino, probe] = hist(nsecs - @start[tid]);
	if (@next[$f] == @off[tid]) { @seq[$ino] = count(); } else { @rand[$ino] = count(); }
	@next[$f] = @off[tid] + args->ret;
`

// bpftraceEvents is bpftraceFiles for the calls (b) makes (pread64,
// pwrite64, fsync, fdatasync) with what --storage adds for SQLite files:
// each read's and write's file, offset, length and first 32 bytes go to
// user space (printed), where --storage maps them to pages.
const bpftraceEvents = `tracepoint:syscalls:sys_enter_pwrite64,tracepoint:syscalls:sys_enter_pread64 /pid == cpid/ {
	@fd[tid] = args->fd; @off[tid] = args->pos; @buf[tid] = (uint64)args->buf; @start[tid] = nsecs;
}
tracepoint:syscalls:sys_enter_fsync,tracepoint:syscalls:sys_enter_fdatasync /pid == cpid/ {
	@fd[tid] = args->fd; @off[tid] = -1; @buf[tid] = 0; @start[tid] = nsecs;
}
tracepoint:syscalls:sys_exit_pwrite64,tracepoint:syscalls:sys_exit_pread64,tracepoint:syscalls:sys_exit_fsync,tracepoint:syscalls:sys_exit_fdatasync /pid == cpid && @start[tid]/ {
` + bpftraceFileStats + `	if (@buf[tid] != 0 && args->ret > 0) {
		printf("%llu %lld %lld %r\n", $ino, @off[tid], args->ret, buf(@buf[tid], 32));
	}
	delete(@start[tid]);
}`

// recordRate reads a run record and picks the throughput from its result.
func recordRate(rec string, pick func(*model.Result) float64) (float64, error) {
	b, err := os.ReadFile(rec)
	if err != nil {
		return 0, err
	}
	var r model.Run
	if err := json.Unmarshal(b, &r); err != nil {
		return 0, err
	}
	return pick(r.Result), nil
}

func run(name string, args ...string) {
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	check(cmd.Run())
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "overhead:", err)
		atexit.Exit(1)
	}
}

// own runs a workload that prints its own rate (re's first group) on
// stdout, after a sync: bare, or under `perfsleuth observe` (the default
// observation) when bin is set; args then may start with observe's own
// flags, ending with "--". perfsleuth's report goes to stderr, the
// workload's output stays on stdout.
func own(dir, bin string, re *regexp.Regexp, args ...string) func(context.Context) (float64, error) {
	return func(ctx context.Context) (float64, error) {
		syscall.Sync()
		argv := args
		if bin != "" {
			if !slices.Contains(argv, "--") {
				argv = append([]string{"--"}, argv...)
			}
			argv = append([]string{bin, "observe"}, argv...)
		}
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = dir
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return 0, fmt.Errorf("%v: %v\n%s%s", argv, err, out, stderr.String())
		}
		m := re.FindSubmatch(out)
		if m == nil {
			return 0, fmt.Errorf("%v: no rate in %q", argv, out)
		}
		return strconv.ParseFloat(string(m[1]), 64)
	}
}

// mariaDB starts a MariaDB server of its own in dir
// (innodb_flush_log_at_trx_commit=2, as issue 21 measured it) with
// sysbench's tables prepared, and returns sysbench's oltp_write_only
// command line (without "run") and the server's pid.
func mariaDB(dir string) ([]string, int) {
	dir = filepath.Join(dir, "mariadb")
	data, sock := filepath.Join(dir, "data"), filepath.Join(dir, "sock")
	check(os.MkdirAll(dir, 0o755))
	run("mariadb-install-db", "--no-defaults", "--datadir="+data, "--user=root", "--auth-root-authentication-method=normal", "--skip-test-db")
	srv := exec.Command("mariadbd", "--no-defaults", "--datadir="+data, "--socket="+sock, "--skip-networking", "--user=root",
		"--pid-file="+filepath.Join(dir, "pid"), "--innodb-buffer-pool-size=256M", "--innodb-flush-log-at-trx-commit=2",
		"--log-error="+filepath.Join(dir, "err.log"))
	check(srv.Start())
	atexit.Add(func() { srv.Process.Signal(syscall.SIGTERM); srv.Wait() })
	waitSocket(sock)
	run("mariadb", "-S", sock, "-u", "root", "-e", "create database sbtest")
	sb := []string{"sysbench", "oltp_write_only", "--db-driver=mysql", "--mysql-socket=" + sock, "--mysql-user=root", "--tables=2", "--table-size=10000"}
	run(sb[0], append(sb[1:], "prepare")...)
	return sb, srv.Process.Pid
}

// redis starts a redis-server of its own in dir, its append-only file
// synced every second, and returns its socket and pid.
func redis(dir string) (string, int) {
	dir = filepath.Join(dir, "redis")
	check(os.MkdirAll(dir, 0o755))
	sock := filepath.Join(dir, "sock")
	srv := exec.Command("redis-server", "--port", "0", "--unixsocket", sock, "--dir", dir, "--save", "",
		"--appendonly", "yes", "--appendfsync", "everysec")
	check(srv.Start())
	atexit.Add(func() { srv.Process.Signal(syscall.SIGTERM); srv.Wait() })
	waitSocket(sock)
	return sock, srv.Process.Pid
}

// waitSocket waits up to 30 s for a server's socket to appear.
func waitSocket(path string) {
	for range 300 {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	check(fmt.Errorf("no %s after 30 s", path))
}
