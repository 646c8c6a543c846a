package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/analyze"
	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/probe"
	"github.com/perfsleuth/perfsleuth/internal/runner"
	"github.com/perfsleuth/perfsleuth/internal/target"
	"github.com/perfsleuth/perfsleuth/internal/toolresult"
)

type observeFlags struct {
	out outputFlags
	// ignoreFailure: a command's failing exit status is not passed on.
	ignoreFailure bool
	// metric (observe only: diagnose has its own) is a regex whose first
	// group is the command's result in its output; metricLower says it is
	// a time or a cost.
	metric      string
	metricLower bool
	// metricRe is metric compiled, by check.
	metricRe *regexp.Regexp
	// output is the observed command's stdout as it passed through, when
	// perfsleuth reads the command's own result from it (a known tool, or
	// --metric); tool is the program's name then.
	output   *toolresult.Capture
	tool     string
	interval time.Duration
	noEBPF   bool
	syscalls bool
	storage  bool
	sql      bool
	stacks   bool
	pids     []int
	duration time.Duration
}

// defaultInterval is the /proc sampling interval: 1 s, as iostat and vmstat
// default to, fine enough for a timeline and cheap (one sample reads a few
// files per thread).
const defaultInterval = time.Second

func (f *observeFlags) bind(cmd *cobra.Command) {
	fs := cmd.PersistentFlags()
	fs.StringVar(&f.out.json, "json", "", "write the run record (versioned JSON, see docs/run-record.md) to FILE; - for stdout")
	fs.StringVar(&f.out.html, "html", "", htmlUsage)
	fs.StringVar(&f.out.text, "output", "", "write the terminal report to FILE instead of the terminal (with a command it goes to stderr by default: the command owns stdout)")
	fs.DurationVar(&f.interval, "interval", defaultInterval, "sampling interval of /proc and /sys")
	fs.BoolVar(&f.noEBPF, "no-ebpf", false, "observe from /proc only, without eBPF probes")
	fs.BoolVar(&f.syscalls, "syscalls", false, "count and time every syscall per thread (like strace -c -w; every syscall on the machine then costs more)")
	fs.BoolVar(&f.storage, "storage", false, "per file: reads, writes, syncs, sizes, sequential or random, time blocked; and SQLite pages by type (hooks the read, write and sync calls: every syscall on the machine then costs more)")
	fs.BoolVar(&f.sql, "sql", false, "name the SQL statement behind each file read, write and sync: per statement its executions, time and IO (uprobes on the SQLite library the workload maps, or on a PostgreSQL server observed with -p; ~1.4 µs a call; implies --storage)")
	fs.BoolVar(&f.stacks, "stacks", false, "take the kernel and user stack of every sleep (off-CPU stacks per category, ~1 µs per sleep) and sample the stacks on CPU at 99 Hz (on-CPU)")
	cmd.Flags().IntSliceVarP(&f.pids, "pid", "p", nil, "observe this running process and its descendants; repeat for several; with a command after --, they and the command are one workload (a server and its client)")
	cmd.Flags().DurationVar(&f.duration, "duration", 0, "with --pid: how long to observe (0: until it exits or Ctrl-C)")
}

func (f *observeFlags) check() error {
	if f.interval < 10*time.Millisecond {
		return fmt.Errorf("--interval %s is too short: use 10ms or more", f.interval)
	}
	if f.noEBPF && (f.syscalls || f.stacks || f.storage || f.sql) {
		return errors.New("--syscalls, --stacks, --storage and --sql need the eBPF probes: drop --no-ebpf")
	}
	var err error
	if f.metricRe, err = metricOf(f.metric, f.metricLower); err != nil {
		return err
	}
	return f.out.check()
}

func (f *observeFlags) options() probe.Options {
	return probe.Options{Interval: f.interval, NoEBPF: f.noEBPF, Syscalls: f.syscalls, Stacks: f.stacks, Storage: f.storage || f.sql, SQL: f.sql}
}

// observe is the pipeline for one target: observe it, analyse the record,
// save and print it. bar (may be nil) is cleared before anything prints.
func (f *observeFlags) observe(cmd *cobra.Command, t target.Target, bar *progressBar) error {
	opts := runner.Options{Probe: f.options()}
	if len(f.pids) > 0 && !f.out.commandOwnsStdout {
		// Nothing else shows while an existing process is observed: say
		// when the window opens (scripts start their own tools on it).
		opts.Armed = func() {
			until := "until it exits"
			if len(f.pids) > 1 {
				until = fmt.Sprintf("until pid %d exits", f.pids[0])
			}
			if f.duration > 0 {
				until = "for " + f.duration.String()
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "observing %s %s: Ctrl-C to end\n", pidWords(f.pids), until)
		}
	}
	run, err := runner.Observe(cmd.Context(), t, opts)
	bar.Clear()
	if err != nil {
		return err
	}
	f.readResult(run)
	analyze.Run(run)
	if err := f.out.emit(cmd, run); err != nil {
		return err
	}
	if run.Target.Kind == "command" && !f.ignoreFailure {
		return commandFailure(run)
	}
	return nil
}

// pidWords names the processes given with -p: "pid 12", "pids 12, 13".
func pidWords(pids []int) string {
	if len(pids) == 1 {
		return fmt.Sprintf("pid %d", pids[0])
	}
	s := make([]string, len(pids))
	for i, p := range pids {
		s[i] = strconv.Itoa(p)
	}
	return "pids " + strings.Join(s, ", ")
}

// teeStdout is the observed command's stdout when perfsleuth reads it: each
// write goes to perfsleuth's stdout as it came, then to capture. A reader
// that goes away (| head) ends the copy, and the command then meets a
// closed pipe as it would have without perfsleuth; perfsleuth itself takes
// the EPIPE as an error instead of dying of SIGPIPE (Go's runtime ends a
// program whose write to fd 1 meets a broken pipe, unless it handles
// SIGPIPE), and its report, on stderr, is still printed.
func teeStdout(capture io.Writer) io.Writer {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	return io.MultiWriter(os.Stdout, capture)
}

// readResult puts the result the command printed itself in the record:
// the number --metric names, or what a known tool reported. When it cannot
// be found the record says so, and the wall time stays the result.
func (f *observeFlags) readResult(run *model.Run) {
	if f.output == nil || run.Result == nil || run.Result.Command == nil || run.Interrupted {
		return
	}
	out := f.output.Bytes()
	c := run.Result.Command
	if f.metricRe != nil {
		if c.Reported = toolresult.Metric(out, f.metricRe, f.metricLower); c.Reported == nil {
			run.Warnings = append(run.Warnings, fmt.Sprintf("--metric %q matched no line of the command's output (its first group must be a number): the wall time is the result", f.metric))
		}
		return
	}
	tc := run.Target.Command
	if tc == nil {
		return
	}
	if c.Reported = toolresult.ParseRun(tc.Argv, tc.Dir, out); c.Reported == nil && c.ExitCode == 0 {
		run.Warnings = append(run.Warnings, fmt.Sprintf("%s printed no result perfsleuth reads (docs/tool-results.md: fio's json or normal output on stdout or in its --output file, sysbench's, pgbench's and redis-benchmark's reports on stdout): the wall time is the result; --metric REGEX names another", f.tool))
	}
}

// workloadFailed is a command that ended with a failing status: perfsleuth
// printed and saved what it measured, and exits with the command's status
// (as time, perf stat and strace do), so that scripts see the failure.
type workloadFailed struct {
	status int
	msg    string
}

func (w workloadFailed) Error() string { return w.msg }

// commandFailure is the command's failing exit status as perfsleuth's own
// (a signal as a shell reports it: 128 + its number), nil when it
// succeeded.
func commandFailure(run *model.Run) error {
	res := run.Result
	if res == nil || res.Command == nil || (res.Command.ExitCode == 0 && res.Command.Signal == "") {
		return nil
	}
	c := res.Command
	status, how := c.ExitCode, fmt.Sprintf("exited with status %d", c.ExitCode)
	if c.Signal != "" {
		status, how = 128+int(unix.SignalNum(c.Signal)), "was killed by "+c.Signal
	}
	if status <= 0 || status > 255 {
		status = 1
	}
	name := "the command"
	if cmd := run.Target.Command; cmd != nil && len(cmd.Argv) > 0 {
		name = cmd.Argv[0]
	}
	return workloadFailed{status: status, msg: fmt.Sprintf("%s %s: perfsleuth exits with status %d (--ignore-failure to exit 0 when the observation succeeded)", name, how, status)}
}

func newObserveCmd() *cobra.Command {
	return newObserveLike(&cobra.Command{
		Use:   "observe [flags] fileio|sqlite [workload flags] | -- CMD [ARGS...] | -p PID",
		Short: "Run a workload under observation and say where its time goes",
		Long: `Run a workload under observation: a built-in benchmark (fileio, sqlite, with the
same flags as 'perfsleuth bench'), any command (its whole process tree), or an
existing process (-p PID). perfsleuth samples /proc and /sys every --interval:
CPU time per CPU, per-thread CPU time and context switches, the process's IO
counters, and iostat -x figures for the block devices involved. It then says
where the workload's time went, names the bottleneck and lists its findings.`,
		Example: `  perfsleuth observe sqlite --journal wal --sync normal
  perfsleuth observe --json run.json fileio --rw randwrite --bs 4k --fsync 1
  perfsleuth observe -- dd if=/dev/zero of=big bs=1M count=512 oflag=direct
  perfsleuth observe -p 1234 --duration 30s`,
	}, nil, nil)
}

// newObserveLike builds observe (and diagnose): the flags, the built-in
// workload subcommands, and the run. pre, if set, checks the command's own
// flags first.
func newObserveLike(cmd *cobra.Command, pre func() error, exp *experimentFlags) *cobra.Command {
	var f observeFlags
	checkAll := func() error {
		if pre != nil {
			if err := pre(); err != nil {
				return err
			}
		}
		return f.check()
	}
	{
		cmd.RunE = func(cmd *cobra.Command, args []string) error {
			if err := checkAll(); err != nil {
				return err
			}
			switch {
			case f.metric != "" && len(args) == 0:
				return errors.New("--metric reads a command's output: give the command after --")
			case len(f.pids) > 0 && exp.on():
				return errors.New("--pid: diagnose reruns the workload under changed conditions, which an existing process cannot be: use diagnose --quick -p PID to observe it, or give the command after --")
			case len(f.pids) > 0 && len(args) > 0 && f.duration != 0:
				return errors.New("--duration goes with -p PID alone; with a command after --, the command's end ends the observation")
			case len(f.pids) > 0 && len(args) == 0:
				return f.observe(cmd, target.NewGroup(target.NewPID(f.pids[0], f.duration), f.pids[1:]), nil)
			case f.duration != 0:
				return errors.New("--duration goes with -p PID; a command is observed until it exits")
			case len(args) == 0:
				return errors.New("nothing to observe: give fileio, sqlite, -- CMD [ARGS...] or -p PID (see 'perfsleuth observe --help')")
			}
			if cmd.ArgsLenAtDash() != 0 {
				return fmt.Errorf("unknown workload %q: use fileio, sqlite, or put a command after --", args[0])
			}
			if exp.on() {
				return exp.run(cmd, nil, args, &f)
			}
			// The command's stdout is its own, byte for byte, as under
			// time or perf stat: the report goes to stderr (or --output).
			if f.out.json == "-" {
				return errors.New("--json -: the command's own output goes to stdout, byte for byte; give --json a file name")
			}
			f.out.commandOwnsStdout = true
			var opts target.CommandOptions
			if f.metric != "" || toolresult.Known(args) {
				// Its output passes through perfsleuth, byte for byte,
				// to be read at the end.
				f.output, f.tool = &toolresult.Capture{}, args[0]
				opts.Stdout = teeStdout(f.output)
			}
			var t target.Target = target.NewCommand(args, opts)
			if len(f.pids) > 0 {
				// A client command and the server it talks to: one
				// workload, ended by the command.
				t = target.NewGroup(t, f.pids)
			}
			return f.observe(cmd, t, nil)
		}
	}
	f.bind(cmd)
	if exp == nil {
		cmd.Flags().StringVar(&f.metric, "metric", "", "with a command: a regex whose first group is its result, from its output (the median of all matching lines); fio, sysbench, pgbench and redis-benchmark are read without it (docs/tool-results.md)")
		cmd.Flags().BoolVar(&f.metricLower, "metric-lower", false, "the --metric number is a time or a cost: lower is better")
	}
	cmd.Flags().BoolVarP(&f.ignoreFailure, "ignore-failure", "i", false, "observing a command: exit 0 when the observation succeeded though the command failed (by default perfsleuth exits with the command's failing status, as time and perf stat do; diagnose's experiments refuse a failing command)")
	for _, w := range []struct {
		name, short string
		bind        targetBinder
	}{
		{"fileio", "The file-IO benchmark (flags as 'perfsleuth bench fileio')", fileioTarget},
		{"sqlite", "The SQLite benchmark (flags as 'perfsleuth bench sqlite')", sqliteTarget},
	} {
		sub := &cobra.Command{Use: w.name + " [workload flags]", Short: w.short, Args: cobra.NoArgs}
		settings := w.bind(sub)
		sub.RunE = func(cmd *cobra.Command, _ []string) error {
			if err := checkAll(); err != nil {
				return err
			}
			if exp.on() {
				t := settings()
				return exp.run(cmd, &t, nil, &f)
			}
			bar := newProgressBar(cmd.ErrOrStderr())
			defer bar.Clear()
			return f.observe(cmd, target.NewBuiltin(settings(), target.Hooks{Phase: bar.Phase, Progress: bar.Progress}), bar)
		}
		cmd.AddCommand(sub)
	}
	return cmd
}
