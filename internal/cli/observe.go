package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/perfsleuth/perfsleuth/internal/analyze"
	"github.com/perfsleuth/perfsleuth/internal/probe"
	"github.com/perfsleuth/perfsleuth/internal/runner"
	"github.com/perfsleuth/perfsleuth/internal/target"
)

type observeFlags struct {
	out      outputFlags
	interval time.Duration
	noEBPF   bool
	syscalls bool
	storage  bool
	stacks   bool
	pid      int
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
	fs.DurationVar(&f.interval, "interval", defaultInterval, "sampling interval of /proc and /sys")
	fs.BoolVar(&f.noEBPF, "no-ebpf", false, "observe from /proc only, without eBPF probes")
	fs.BoolVar(&f.syscalls, "syscalls", false, "count and time every syscall per thread (like strace -c -w; every syscall on the machine then costs more)")
	fs.BoolVar(&f.storage, "storage", false, "per file: reads, writes, syncs, sizes, sequential or random, time blocked; and SQLite pages by type (hooks the read, write and sync calls: every syscall on the machine then costs more)")
	fs.BoolVar(&f.stacks, "stacks", false, "take the kernel and user stack of every sleep (off-CPU stacks per category, ~1 µs per sleep) and sample the stacks on CPU at 99 Hz (on-CPU)")
	cmd.Flags().IntVarP(&f.pid, "pid", "p", 0, "observe this running process and its descendants")
	cmd.Flags().DurationVar(&f.duration, "duration", 0, "with --pid: how long to observe (0: until it exits or Ctrl-C)")
}

func (f *observeFlags) check() error {
	if f.interval < 10*time.Millisecond {
		return fmt.Errorf("--interval %s is too short: use 10ms or more", f.interval)
	}
	if f.noEBPF && (f.syscalls || f.stacks || f.storage) {
		return errors.New("--syscalls, --stacks and --storage need the eBPF probes: drop --no-ebpf")
	}
	return f.out.check()
}

func (f *observeFlags) options() probe.Options {
	return probe.Options{Interval: f.interval, NoEBPF: f.noEBPF, Syscalls: f.syscalls, Stacks: f.stacks, Storage: f.storage}
}

// observe is the pipeline for one target: observe it, analyse the record,
// save and print it. bar (may be nil) is cleared before anything prints.
func (f *observeFlags) observe(cmd *cobra.Command, t target.Target, bar *progressBar) error {
	opts := runner.Options{Probe: f.options()}
	if f.pid != 0 {
		// Nothing else shows while an existing process is observed: say
		// when the window opens (scripts start their own tools on it).
		opts.Armed = func() {
			until := "until it exits"
			if f.duration > 0 {
				until = "for " + f.duration.String()
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "observing pid %d %s: Ctrl-C to end\n", f.pid, until)
		}
	}
	run, err := runner.Observe(cmd.Context(), t, opts)
	bar.Clear()
	if err != nil {
		return err
	}
	analyze.Run(run)
	return f.out.emit(cmd, run)
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
			case f.pid != 0 && len(args) > 0:
				return errors.New("give either -p PID or a command after --, not both")
			case f.pid != 0 && exp.on():
				return errors.New("diagnose reruns the workload under changed conditions, which an existing process cannot be: use diagnose --quick -p PID to observe it, or give the command after --")
			case f.pid != 0:
				return f.observe(cmd, target.NewPID(f.pid, f.duration), nil)
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
			return f.observe(cmd, target.NewCommand(args, target.CommandOptions{}), nil)
		}
	}
	f.bind(cmd)
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
