//go:build amd64

package timeacct

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/probe"
)

// minCalibrationRuns is the fewest runs a per-run cost is computed from.
const minCalibrationRuns = 20

// Calibrate measures what one run of each program costs on this host, for
// Config.Costs. It loads the probe twice with the kernel's BPF run-time
// statistics on (they time every program run; they are off while
// observing, because they slow every BPF program on the machine): first
// tracking nothing while this process makes context switches, wake-ups,
// processes, syscalls and, when dir is given, fdatasync calls on an unnamed
// temporary file in dir, then tracking this process through the same work.
// The first phase gives the filter-only cost of each program, the second
// the cost of a tracked run. Takes about half a second; needs root.
func Calibrate(cfg Config, dir string) (*Costs, error) {
	st, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		return nil, fmt.Errorf("calibrate: BPF run-time statistics unavailable: %w", err)
	}
	defer st.Close()
	cfg.Costs = nil
	cfg.Roots = nil
	un, err := calibrationPhase(cfg, dir)
	if err != nil {
		return nil, err
	}
	cfg.Roots = []int{os.Getpid()}
	tr, err := calibrationPhase(cfg, dir)
	if err != nil {
		return nil, err
	}
	c := &Costs{Syscalls: cfg.Syscalls, Stacks: cfg.Stacks}
	for i := range NumPrograms {
		if un.statRuns[i] >= minCalibrationRuns {
			c.UntrackedNs[i] = un.statNs[i] / un.statRuns[i]
		}
	}
	for i := range NumPrograms {
		if c.UntrackedNs[i] == 0 {
			// A program that seldom runs untracked (a fork, an exit, a
			// sync) does what the switch's filter does: one lookup.
			c.UntrackedNs[i] = c.UntrackedNs[ProgSwitch]
		}
		t := tr.tracked[i]
		if t < minCalibrationRuns || tr.statRuns[i] < t {
			continue
		}
		ns := (tr.statNs[i] - (tr.statRuns[i]-t)*c.UntrackedNs[i]) / t
		c.TrackedNs[i] = max(ns, c.UntrackedNs[i])
	}
	return c, nil
}

// phase is what one calibration phase measured, per program.
type phase struct {
	statRuns, statNs [NumPrograms]float64 // the kernel's BPF statistics
	tracked          [NumPrograms]float64 // the probe's own counter of tracked runs
}

func calibrationPhase(cfg Config, dir string) (*phase, error) {
	p, err := start(cfg)
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	defer p.close()
	werr := calibrationWork(dir)
	ph := &phase{}
	// A group's programs' runs and time summed (the CPU-context markers,
	// the exits with handle_free).
	for i, prog := range p.grouped {
		if s, err := probe.ProgStats(prog); err == nil {
			ph.statRuns[i] += float64(s.RunCount)
			ph.statNs[i] += float64(s.Runtime.Nanoseconds())
		}
	}
	res, err := p.read()
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	for i := range NumPrograms {
		ph.tracked[i] = float64(res.TrackedRuns[i])
	}
	return ph, werr
}

// calibrationWork makes every kind of event the probe counts: a pipe
// ping-pong between two threads (switches, wake-ups, syscalls), processes
// that start and exit, and fdatasync calls on a file in dir.
func calibrationWork(dir string) error {
	const roundTrips = 4000
	var a, b [2]int
	if err := unix.Pipe(a[:]); err != nil {
		return err
	}
	defer unix.Close(a[0])
	defer unix.Close(a[1])
	if err := unix.Pipe(b[:]); err != nil {
		return err
	}
	defer unix.Close(b[0])
	defer unix.Close(b[1])
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		buf := []byte{0}
		for range roundTrips {
			unix.Read(a[0], buf)
			unix.Write(b[1], buf)
		}
		close(done)
	}()
	runtime.LockOSThread()
	buf := []byte{0}
	for range roundTrips {
		unix.Write(a[1], buf)
		unix.Read(b[0], buf)
	}
	runtime.UnlockOSThread()
	<-done

	// Processes that start and exit (fork, wake-up of a new task, exit).
	// Not threads that exit: a goroutine that exits locked to its thread
	// ends the thread, and a child started from that thread with
	// Pdeathsig (an observed command) would be killed with it.
	if _, err := os.Stat("/bin/true"); err == nil {
		for range 25 {
			exec.Command("/bin/true").Run()
		}
	}

	if dir == "" {
		return nil
	}
	// An unnamed file (O_TMPFILE): nothing is left in dir, whatever way
	// perfsleuth exits. A filesystem without O_TMPFILE gets no sync
	// calibration; the estimate then says so.
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), "calibration")
	defer f.Close()
	for range 100 {
		if _, err := f.Write([]byte{0}); err != nil {
			return nil
		}
		unix.Fdatasync(int(f.Fd()))
	}
	return nil
}
