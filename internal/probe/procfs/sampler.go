// Package procfs observes a workload without eBPF, by sampling /proc and
// /proc/diskstats at a fixed interval: per-CPU time split (top), the
// workload's process tree with per-thread CPU time, run-queue wait, context
// switches and block-IO delay and per-process IO counters, and iostat -x per
// disk. It needs no privileges to watch one's own processes; what it cannot
// see is listed in Observation.Missing.
//
// # Cost
//
// A sample reads two small files per thread (stat, status: ~25 µs), and for
// a thread that ran since the last sample its schedstat (~7 µs) and, with
// delay accounting on, its io (~7.5 µs); /proc/PID/stat and io per process,
// one stat per process that is new on the machine, and /proc/stat and
// /proc/diskstats. For a 24-thread workload among ~130 processes (2-vCPU
// EPYC VM, kernel 6.18, delay accounting off) BenchmarkSnapshot, whose
// threads are parked, measured a median 0.95 ms of CPU per sample (0.75-1.1
// ms), and BenchmarkSnapshotBusy, which reads every thread as if it had run,
// 1.1 ms (0.95-1.4 ms): about 0.1 % of one CPU at the default 1 s interval.
// The sampling thread's CPU time is reported as Observation.ObserverCPUSec.
//
// # Process tree
//
// The tree is RootPID and every descendant. Each interval /proc is listed;
// a PID not seen before has its stat read once, and joins the tree when its
// parent is in it (repeated until nothing joins, so a child and grandchild
// born in the same interval both join). A PID known to be outside is not read
// again: a process's parent is fixed at fork, so only new PIDs can join. This
// misses a process whose parent exited before a sample saw it (it is
// re-parented to init), and would misclassify a PID recycled within one
// interval (pid_max is 32768 on some systems).
//
// # Accounting
//
// Each process is identified by PID and start time. Per process, utime/stime
// are its own CPU time (all threads, live and exited), cutime/cstime the time
// of the children it has reaped, recursively; /proc/PID/io also receives a
// reaped child's counters (kernel/exit.c, wait_task_zombie). A process first
// seen after the window began counts from zero; one there at the start counts
// from its values then. The interval's CPU time and IO of the tree is the sum
// over its living processes of
//
//	Δutime + Δstime + Δio   (own)
//	+ Δcutime + Δcstime     (children reaped in the interval)
//	- pending               (what tracked reaped descendants were already credited with)
//
// When a tracked process vanishes (it has been reaped), the totals it was
// credited with (its last utime+cutime, stime+cstime, io, which include any
// pre-window part) become "pending" on its nearest living tracked ancestor
// and are taken off that ancestor's next increases of cutime/cstime/io,
// which contain the vanished process's final totals. What remains is exactly
// what nobody saw: the vanished process's last moments, and children that
// lived and died between two samples. Parents are read before children so
// that a reap between two reads is never counted twice. A process reaped by
// init (orphaned) loses its last interval. An excluded launcher root
// (Config.IncludeRoot false) contributes only its reaped children's CPU
// time; its own IO cannot be told apart from theirs, so its IO is counted
// only in intervals where it reaped a child.
//
// Context switches, run-queue wait (schedstat) and block-IO delay (stat
// field 42) exist only per thread and are summed over the threads seen; a
// thread's last interval before it exits is lost. Counters that go
// backwards count as zero.
//
// # Run-queue wait and block-IO delay
//
// /proc/PID/task/TID/schedstat's second field is the time the thread was
// runnable but waiting for a CPU (sched_info.run_delay, ns). The kernel keeps
// it with CONFIG_SCHED_INFO, without delay accounting, and shows it to the
// thread's owner; a wait is added when it ends (the thread gets a CPU), so
// one in progress at either end of the window is counted when it ends. Start
// checks the sampling thread's own schedstat: a kernel that keeps none has no
// file or reads "0 0 0" (older kernels keep it only with delay accounting
// on), and ThreadUse.SchedStat is then false.
//
// Stat field 42 is delay accounting's block-IO wait, which counts only
// while kernel.task_delayacct is 1 (Observation.DelayAcct). It is one total
// for reads, writeback and syncs alike; to tell them apart as far as that is
// possible, the thread's own /proc/PID/task/TID/io is read too, only while
// delay accounting is on (ThreadUse.IO).
//
// Both files are read only for a thread that has run a tick or been
// switched out since its last read. Their counters grow while it runs, or
// when a wait for a CPU ends, and are cumulative: what a skipped read would
// have shown a later one shows, and only a thread that exits first loses it,
// as it loses its last interval anyway. The first and the final reads are
// never skipped. Parked threads, most of a thread pool, then cost two files
// a sample, not three or four.
package procfs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	promfs "github.com/prometheus/procfs"
	"github.com/prometheus/procfs/blockdevice"
	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
)

// DefaultInterval is the sampling period when Config.Interval is 0: /proc
// CPU times are in 10 ms ticks, so shorter periods quantise CPU shares
// coarsely (100 ticks per CPU per second gives 1 % steps).
const DefaultInterval = time.Second

// tailMergeDivisor: a final interval (at Stop) shorter than Interval divided
// by this is merged into the previous sample instead of standing alone; a
// 50 ms sample would show CPU shares in 20 % steps.
const tailMergeDivisor = 4

// Config says what to sample.
type Config struct {
	// RootPID is the workload's top process; its descendants are followed.
	RootPID int
	// OtherRoots are more processes followed with their descendants as
	// part of the workload (a server observed with a client command).
	OtherRoots []int
	// IncludeRoot counts the root process itself; false when it is only a
	// launcher (a shell, perfsleuth) whose children are the workload.
	IncludeRoot bool
	// Interval between samples; DefaultInterval when 0.
	Interval time.Duration
	// Disks are whole disks always reported (e.g. the workload directory's);
	// other whole disks are reported when their counters moved.
	Disks []string
	// ProcRoot is where procfs is mounted; "/proc" when empty.
	ProcRoot string
	// SysRoot is where sysfs is mounted; "/sys" when empty. /sys/block tells
	// whole disks from partitions.
	SysRoot string
}

// Sampler samples /proc for one observation window.
type Sampler struct {
	cfg   Config
	r     *reader
	fs    promfs.FS
	bd    blockdevice.FS
	tree  *tree
	whole map[string]bool

	mu       sync.Mutex
	warnings []string
	warned   map[string]bool

	stopOnce sync.Once
	stopCh   chan struct{}
	done     chan struct{}
	obs      *model.Observation

	first, last, lastFrom *sysSnap
	timeline              []model.Sample
	observer              time.Duration
	// delayAcct is model.Observation.DelayAcct as read at Start;
	// noSchedstat says why threads' run-queue waits are not read, when not.
	delayAcct   string
	noSchedstat string
}

// sysSnap is one reading of the system-wide files.
type sysSnap struct {
	t     time.Time
	cpu   promfs.Stat
	disks map[string]blockdevice.IOStats
}

// NewSampler prepares a sampler; nothing is read until Start.
func NewSampler(cfg Config) *Sampler {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.ProcRoot == "" {
		cfg.ProcRoot = "/proc"
	}
	if cfg.SysRoot == "" {
		cfg.SysRoot = "/sys"
	}
	return &Sampler{cfg: cfg, r: newReader(), whole: map[string]bool{}, warned: map[string]bool{},
		stopCh: make(chan struct{}), done: make(chan struct{})}
}

// Start takes the first snapshot, which is the start of the window, and
// samples every Interval in a goroutine until ctx ends or Stop is called.
func (s *Sampler) Start(ctx context.Context) error {
	var err error
	if s.fs, err = promfs.NewFS(s.cfg.ProcRoot); err != nil {
		return fmt.Errorf("procfs sampler: %w", err)
	}
	if s.bd, err = blockdevice.NewFS(s.cfg.ProcRoot, s.cfg.SysRoot); err != nil {
		return fmt.Errorf("procfs sampler: %w", err)
	}
	if s.tree, err = newTree(s.cfg.ProcRoot, s.cfg.RootPID, s.cfg.OtherRoots, s.cfg.IncludeRoot, s.r, s.warnLocked); err != nil {
		return err
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err == nil {
		// Process start times are clock ticks after boot.
		s.tree.startTicks = uint64(ts.Nano()) / uint64(time.Second/userHZ)
	}
	s.delayAcct = delayAcctState(s.cfg.ProcRoot)
	s.noSchedstat = schedstatMissing(s.cfg.ProcRoot)
	s.tree.schedstat = s.noSchedstat == ""
	s.tree.threadIO = s.delayAcct == model.DelayAcctOn

	s.mu.Lock()
	snap, _, err := s.snapshot()
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("procfs sampler: %w", err)
	}
	s.first, s.last = snap, snap
	go s.loop(ctx)
	return nil
}

func (s *Sampler) loop(ctx context.Context) {
	defer close(s.done)
	// One OS thread for the sampler, so its CPU time can be measured.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tick := time.NewTicker(s.cfg.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.stopCh:
			return
		case <-tick.C:
			s.mu.Lock()
			if snap, use, err := s.snapshot(); err != nil {
				s.warnLocked(fmt.Sprintf("sample skipped: %v", err))
			} else {
				s.timeline = append(s.timeline, s.sample(s.last, snap, use))
				s.lastFrom, s.last = s.last, snap
			}
			s.mu.Unlock()
		}
	}
}

// Stop ends the window with a final snapshot and returns what was seen.
// Calling it again returns the same observation.
func (s *Sampler) Stop() *model.Observation {
	s.stopOnce.Do(func() {
		close(s.stopCh)
		if s.first == nil { // never started
			s.obs = &model.Observation{Source: "procfs", Missing: s.missing()}
			return
		}
		<-s.done
		s.mu.Lock()
		defer s.mu.Unlock()
		s.tree.final = true
		if snap, use, err := s.snapshot(); err != nil {
			s.warnLocked(fmt.Sprintf("final sample skipped: %v", err))
		} else {
			s.finish(snap, use)
		}
		s.obs = s.observation()
	})
	return s.obs
}

// finish appends the final interval, merged into the previous sample when
// it is too short to stand alone.
func (s *Sampler) finish(snap *sysSnap, use model.ProcessUse) {
	n := len(s.timeline)
	if n > 0 && s.lastFrom != nil && snap.t.Sub(s.last.t) < s.cfg.Interval/tailMergeDivisor {
		prev := s.timeline[n-1].Process
		merged := s.sample(s.lastFrom, snap, addUse(prev, use))
		s.timeline[n-1] = merged
	} else {
		s.timeline = append(s.timeline, s.sample(s.last, snap, use))
		s.lastFrom = s.last
	}
	s.last = snap
}

// Warnings are problems met while sampling, in plain words.
func (s *Sampler) Warnings() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.warnings...)
}

// warnLocked records a warning once; callers (the tree included) hold s.mu.
func (s *Sampler) warnLocked(msg string) {
	if !s.warned[msg] {
		s.warned[msg] = true
		s.warnings = append(s.warnings, msg)
	}
}

// snapshot reads everything once; callers hold s.mu. It also accounts the
// calling thread's CPU time as the observer's cost.
func (s *Sampler) snapshot() (*sysSnap, model.ProcessUse, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c0 := threadCPU()
	defer func() { s.observer += threadCPU() - c0 }()

	snap := &sysSnap{t: time.Now()}
	var err error
	if snap.cpu, err = s.fs.Stat(); err != nil {
		return nil, model.ProcessUse{}, fmt.Errorf("read %s/stat: %w", s.cfg.ProcRoot, err)
	}
	use, err := s.tree.update()
	if err != nil {
		return nil, model.ProcessUse{}, err
	}
	ds, err := s.bd.ProcDiskstats()
	if err != nil {
		s.warnLocked(fmt.Sprintf("no disk statistics: %v", err))
	}
	snap.disks = make(map[string]blockdevice.IOStats, len(ds))
	for _, d := range ds {
		snap.disks[d.DeviceName] = d.IOStats
	}
	return snap, use, nil
}

func threadCPU() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

func (s *Sampler) sample(a, b *sysSnap, use model.ProcessUse) model.Sample {
	return model.Sample{
		TSec:    b.t.Sub(s.first.t).Seconds(),
		CPUs:    cpuUses(a.cpu, b.cpu),
		Process: use,
		Disks:   s.diskUses(a, b),
	}
}

// diskUses reports Config.Disks and every other whole disk that moved.
func (s *Sampler) diskUses(a, b *sysSnap) []model.DiskUse {
	dt := b.t.Sub(a.t)
	out := []model.DiskUse{}
	listed := map[string]bool{}
	for _, name := range s.cfg.Disks {
		sa, okA := a.disks[name]
		sb, okB := b.disks[name]
		if !okA || !okB {
			s.warnLocked(fmt.Sprintf("disk %s is not in %s/diskstats: no iostat for it", name, s.cfg.ProcRoot))
			continue
		}
		listed[name] = true
		out = append(out, diskUse(name, sa, sb, dt))
	}
	var others []string
	for name, sb := range b.disks {
		sa, ok := a.disks[name]
		if ok && !listed[name] && diskMoved(sa, sb) && s.isWholeDisk(name) {
			others = append(others, name)
		}
	}
	sort.Strings(others)
	for _, name := range others {
		out = append(out, diskUse(name, a.disks[name], b.disks[name], dt))
	}
	return out
}

// isWholeDisk says whether name is in /sys/block (partitions are not).
func (s *Sampler) isWholeDisk(name string) bool {
	w, ok := s.whole[name]
	if !ok {
		_, err := os.Stat(filepath.Join(s.cfg.SysRoot, "block", name))
		w = err == nil
		s.whole[name] = w
	}
	return w
}

func (s *Sampler) observation() *model.Observation {
	obs := &model.Observation{
		Source:         "procfs",
		IntervalSec:    s.cfg.Interval.Seconds(),
		DurationSec:    s.last.t.Sub(s.first.t).Seconds(),
		Missing:        s.missing(),
		Timeline:       s.timeline,
		ObserverCPUSec: s.observer.Seconds(),
		DelayAcct:      s.delayAcct,
	}
	if now := delayAcctState(s.cfg.ProcRoot); now != s.delayAcct {
		obs.DelayAcct = model.DelayAcctChanged
	} else if now == model.DelayAcctOn && s.cfg.ProcRoot == "/proc" && sysinfo.DelayedDequeue() {
		obs.DelayAcct = model.DelayAcctUnreliable
	}
	if obs.Timeline == nil {
		obs.Timeline = []model.Sample{}
	}
	var total model.ProcessUse
	for _, smp := range s.timeline {
		total = addUse(total, smp.Process)
	}
	threads := s.tree.threadUses()
	total.Processes = s.tree.processesSeen()
	total.Threads = len(threads)
	obs.Totals = model.Totals{
		CPUs:    cpuUses(s.first.cpu, s.last.cpu),
		Process: total,
		Threads: threads,
		Disks:   s.diskUses(s.first, s.last),
	}
	return obs
}

// addUse adds b's deltas to a; the counts are b's (the later interval's).
func addUse(a, b model.ProcessUse) model.ProcessUse {
	return model.ProcessUse{
		Processes:           b.Processes,
		Threads:             b.Threads,
		UserSec:             a.UserSec + b.UserSec,
		SystemSec:           a.SystemSec + b.SystemSec,
		VolCtxSw:            a.VolCtxSw + b.VolCtxSw,
		InvolCtxSw:          a.InvolCtxSw + b.InvolCtxSw,
		RChar:               a.RChar + b.RChar,
		WChar:               a.WChar + b.WChar,
		SyscR:               a.SyscR + b.SyscR,
		SyscW:               a.SyscW + b.SyscW,
		ReadBytes:           a.ReadBytes + b.ReadBytes,
		WriteBytes:          a.WriteBytes + b.WriteBytes,
		CancelledWriteBytes: a.CancelledWriteBytes + b.CancelledWriteBytes,
		IODelaySec:          a.IODelaySec + b.IODelaySec,
		RunDelaySec:         a.RunDelaySec + b.RunDelaySec,
	}
}

// missing says, in plain words, what sampling /proc cannot see.
func (s *Sampler) missing() []string {
	m := []string{
		"threads that start and exit between two samples (eBPF sees them); their CPU time still counts in their process's total",
		"processes whose parent exits before a sample sees them (re-parented to init)",
		"per-syscall counts and latency",
		"why a thread was blocked (locks, sleeps, page faults, storage): only the total block-IO wait, and only with delay accounting on",
		"block IO per process is only the /proc/PID/io byte counts: no latency or request sizes, and write_bytes counts pages dirtied, not when the disk wrote them",
		"CPU time is in 10 ms ticks, so bursts shorter than a tick may read as 0",
	}
	switch s.delayAcct {
	case model.DelayAcctOff:
		m = append(m, "block-IO delay per thread: delay accounting is off (sudo sysctl -w kernel.task_delayacct=1 turns it on)")
	case model.DelayAcctUnavailable:
		m = append(m, "block-IO delay per thread: no kernel.task_delayacct sysctl (kernel without CONFIG_TASK_DELAY_ACCT, or older than 5.14)")
	case model.DelayAcctOn:
		m = append(m, "whether a thread's block-IO delay was a read, a write or a sync: the kernel keeps one total")
	}
	if s.noSchedstat != "" {
		m = append(m, "time waiting for a CPU (run-queue wait): "+s.noSchedstat)
	}
	if !s.cfg.IncludeRoot {
		m = append(m, "the launcher's own IO, in intervals where it reaps a child, cannot be told apart from the child's")
	}
	return m
}

// delayAcctState reads kernel.task_delayacct the way `perfsleuth doctor`'s
// delay_accounting check does (internal/sysinfo, checkDelayAccounting), less
// its fdatasync probe: "1" is on, "0" off, no file unavailable.
func delayAcctState(procRoot string) string {
	switch strings.TrimSpace(readSmall(filepath.Join(procRoot, "sys/kernel/task_delayacct"))) {
	case "":
		return model.DelayAcctUnavailable
	case "0":
		return model.DelayAcctOff
	default:
		return model.DelayAcctOn
	}
}

// schedstatMissing says why per-thread schedstat cannot be used, or "" when
// it can. Kernels without CONFIG_SCHED_INFO have no such file; older ones
// that keep the counts only while delay accounting is on print "0 0 0".
// The calling thread is running, so a kernel that keeps them shows it has
// run.
func schedstatMissing(procRoot string) string {
	b, err := os.ReadFile(filepath.Join(procRoot, "thread-self/schedstat"))
	if err != nil {
		return fmt.Sprintf("%s/thread-self/schedstat is not readable (kernel without CONFIG_SCHED_INFO?): %v", procRoot, err)
	}
	if onCPU, _, ok := parseSchedstat(b); !ok || onCPU == 0 {
		return fmt.Sprintf("the kernel keeps no schedstat (%s/thread-self/schedstat reads %q; older kernels keep it only with delay accounting on)", procRoot, strings.TrimSpace(string(b)))
	}
	return ""
}

func readSmall(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(b)
}
