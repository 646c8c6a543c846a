package analyze

import (
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// consistentRun is a run whose figures agree: two busy threads of pid 1
// over 10 s on 2 CPUs, one that wrote and synced, one that read; an idle
// thread; /proc saw the two busy ones run and the idle one not.
func consistentRun() *model.Run {
	w := thread(1, map[string]float64{"cpu": 3, "cpu-wait": 0.5, "storage-write": 1, "storage-sync": 4, "lock": 0.5, "sleep": 1})
	r := thread(2, map[string]float64{"cpu": 4, "storage-read": 5, "sleep": 1})
	idle := thread(3, map[string]float64{"sleep": 10})
	run := runWith(2, 10, w, r, idle)
	ta := run.TimeAccounting
	ta.ThreadsCreated = 1
	ta.Syncs = []model.SyncCalls{{Kind: "fdatasync", Count: 1000, TotalSec: 4.6, SplitCount: 998, SplitSec: 4.59,
		Split: map[string]float64{"cpu": 0.4, "cpu-wait": 0.19, "storage-sync": 4}}}
	run.Observation = &model.Observation{DurationSec: 10, Totals: model.Totals{Threads: []model.ThreadUse{
		{PID: 1, TID: 1, UserSec: 1, SystemSec: 2, VolCtxSw: 1000},
		{PID: 1, TID: 2, UserSec: 3, SystemSec: 1, VolCtxSw: 5000},
		{PID: 1, TID: 3},
	}}}
	return run
}

func TestInconsistencies(t *testing.T) {
	cases := []struct {
		name   string
		change func(r *model.Run)
		// want are the disagreements expected, each a part of one line;
		// none for a record that agrees with itself.
		want []string
	}{
		{name: "a record that agrees", change: func(r *model.Run) {}},

		// Threads and processes counted against those listed.
		{
			name:   "more exits counted than threads listed exited",
			change: func(r *model.Run) { r.TimeAccounting.ThreadsExited = 9 },
			want:   []string{"0 threads are listed as exited, and the accounting counted 9 exits"},
		},
		{
			name: "more threads listed exited than exits counted",
			change: func(r *model.Run) {
				r.TimeAccounting.Threads = append(r.TimeAccounting.Threads, model.ThreadTime{PID: 1, Comm: "t", Exited: true, Folded: 40,
					WallSec: 1, Seconds: map[string]float64{"sleep": 1}})
				r.TimeAccounting.ThreadsCreated, r.TimeAccounting.ThreadsExited = 40, 3
			},
			want: []string{"40 threads are listed as exited, and the accounting counted 3 exits"},
		},
		{
			// With events dropped the listing may be short, not long.
			name: "dropped events: exits counted beyond the threads listed are lost entries",
			change: func(r *model.Run) {
				r.TimeAccounting.Dropped, r.TimeAccounting.ThreadsExited, r.TimeAccounting.ThreadsCreated = 12, 50, 60
			},
		},
		{
			name:   "a peak above every thread listed",
			change: func(r *model.Run) { r.TimeAccounting.PeakThreads = 14 },
			want:   []string{"the accounting counted 14 threads alive at once, and lists 3 threads in all"},
		},
		{
			name:   "more threads created than listed",
			change: func(r *model.Run) { r.TimeAccounting.ThreadsCreated = 20 },
			want:   []string{"the accounting counted 20 threads created, and lists 3 threads in all"},
		},
		{
			name:   "more processes created than threads",
			change: func(r *model.Run) { r.TimeAccounting.ProcessesCreated = 2 },
			want:   []string{"2 processes created, more than the 1 threads created"},
		},
		{
			// Regression: PostgreSQL by -p read "at most 6 alive" with 14
			// processes listed.
			name: "threads /proc saw run that the accounting does not list",
			change: func(r *model.Run) {
				for tid := 100; tid < 114; tid++ {
					r.Observation.Totals.Threads = append(r.Observation.Totals.Threads, model.ThreadUse{PID: tid, TID: tid, UserSec: 0.01})
				}
			},
			want: []string{"/proc saw 1 threads of pid 100 run in its window, and the accounting lists 0 (14 threads in all"},
		},
		{
			// A zombie is listed by /proc and never ran in the window.
			name: "threads /proc lists that did not run",
			change: func(r *model.Run) {
				for tid := 100; tid < 114; tid++ {
					r.Observation.Totals.Threads = append(r.Observation.Totals.Threads, model.ThreadUse{PID: tid, TID: tid})
				}
			},
		},
		{
			name: "threads /proc saw run are among an exited process's folded ones",
			change: func(r *model.Run) {
				r.TimeAccounting.Threads = append(r.TimeAccounting.Threads, model.ThreadTime{PID: 7, Comm: "w", Exited: true, Folded: 5,
					WallSec: 1, Seconds: map[string]float64{"sleep": 1}})
				r.TimeAccounting.ThreadsCreated, r.TimeAccounting.ProcessesCreated, r.TimeAccounting.ThreadsExited = 6, 1, 5
				for tid := 70; tid < 75; tid++ {
					r.Observation.Totals.Threads = append(r.Observation.Totals.Threads, model.ThreadUse{PID: 7, TID: tid, InvolCtxSw: 3})
				}
			},
		},

		// Sync calls: the split against itself and the accounting.
		{
			name:   "a split that does not add up to its calls' time",
			change: func(r *model.Run) { r.TimeAccounting.Syncs[0].Split["storage-sync"] = 3 },
			want:   []string{"fdatasync: its split by category adds up to 3.590s, and the 998 calls split took 4.590s"},
		},
		{
			name:   "a split longer than its calls' time",
			change: func(r *model.Run) { r.TimeAccounting.Syncs[0].Split["cpu"] = 0.5 },
			want:   []string{"fdatasync: its split by category adds up to 4.690s, and the 998 calls split took 4.590s"},
		},
		{
			// A call begun before the window opened is split from the
			// opening: short by at most one call per thread then alive.
			name: "a split short by a call begun before the window",
			change: func(r *model.Run) {
				s := &r.TimeAccounting.Syncs[0]
				s.Buckets = []model.Bucket{{LowNs: 2e6, HighNs: 4e6 - 1, Count: 900}, {LowNs: 8e6, HighNs: 16e6 - 1, Count: 100}}
				s.Split["storage-sync"] = 3.97
			},
		},
		{
			name: "a split short by more than a call per thread",
			change: func(r *model.Run) {
				s := &r.TimeAccounting.Syncs[0]
				s.Buckets = []model.Bucket{{LowNs: 2e6, HighNs: 4e6 - 1, Count: 900}, {LowNs: 8e6, HighNs: 16e6 - 1, Count: 100}}
				s.Split["storage-sync"] = 3.9
			},
			want: []string{"fdatasync: its split by category adds up to 4.490s, and the 998 calls split took 4.590s"},
		},
		{
			name:   "more calls split than counted",
			change: func(r *model.Run) { r.TimeAccounting.Syncs[0].SplitCount = 1001 },
			want:   []string{"fdatasync: 1,001 calls split by category, of 1,000 calls counted"},
		},
		{
			name: "calls split that took longer than all calls",
			change: func(r *model.Run) {
				r.TimeAccounting.Syncs[0].TotalSec = 4.5
			},
			want: []string{"fdatasync: the calls split took 4.590000s, more than all 1,000 calls counted, 4.500000s"},
		},
		{
			// Regression: fdatasync 7.1 s in the sync table beside 2.6 s
			// of storage-sync, with nothing to say how they add up.
			name: "sync calls blocked longer than the accounting's storage-sync",
			change: func(r *model.Run) {
				s := &r.TimeAccounting.Syncs[0]
				s.Split["storage-sync"], s.SplitSec, s.TotalSec = 7.1, 7.69, 7.7
			},
			want: []string{"the sync calls' split has 7.100s of storage-sync, more than the accounting's 4.000s of storage-sync over all its threads"},
		},
		{
			// An idle thread's syncs are in the split: its time counts.
			name: "an idle thread's sync time holds the split",
			change: func(r *model.Run) {
				r.TimeAccounting.Threads[2].Seconds = map[string]float64{"sleep": 9.99, "storage-sync": 0.01}
				s := &r.TimeAccounting.Syncs[0]
				s.Split["storage-sync"], s.SplitSec, s.TotalSec = 4.005, 4.595, 4.6
			},
		},

		// The files table against the accounting.
		{
			name: "files blocked within the accounting's storage time",
			change: func(r *model.Run) {
				r.Storage = &model.StorageIO{Files: []model.FileIO{{Path: "/a", BlockedSec: 6, LockSec: 0.3}, {Path: "/b", BlockedSec: 3.9, LockSec: 0.2}}}
			},
		},
		{
			name: "files blocked longer than the accounting's storage time",
			change: func(r *model.Run) {
				r.Storage = &model.StorageIO{Files: []model.FileIO{{Path: "/a", BlockedSec: 7, LockSec: 0.4}, {Path: "/b", BlockedSec: 3.9, LockSec: 0.2}}}
			},
			want: []string{"the files table has 10.900s blocked on storage, more than the accounting's 10.000s",
				"the files table has 0.600s waiting on locks, more than the accounting's 0.500s of lock"},
		},

		// Block devices: depth 1 against the busy time, and drift.
		{
			name: "requests at depth 1 within the disk's busy time",
			change: func(r *model.Run) {
				r.Storage = &model.StorageIO{Devices: []model.BlockDevice{depth1Disk(10000, 55e-6, 0.56)}}
			},
		},
		{
			// Regression: fio's reads at iodepth 1 read a mean service of
			// 142 µs beside a busy time of 55 µs a request.
			name: "requests at depth 1 longer in the driver than it was busy",
			change: func(r *model.Run) {
				r.Storage = &model.StorageIO{Devices: []model.BlockDevice{depth1Disk(10000, 142e-6, 0.55)}}
			},
			want: []string{"sda: its 10,000 requests, each issued with no other in the driver, spent 1.42s there (142µs each on average), and the disk was busy in the driver 550ms (55.0µs a request)"},
		},
		{
			name: "requests at depth, whose busy time is an undercount",
			change: func(r *model.Run) {
				d := depth1Disk(10000, 142e-6, 0.55)
				d.Ops[0].Depth = []model.Range{{Low: 0, High: 1, Count: 5000}, {Low: 2, High: 3, Count: 5000}}
				r.Storage = &model.StorageIO{Devices: []model.BlockDevice{d}}
			},
		},
		{
			// A preflush is not issued: its "service" is the flush
			// machinery's time, not the driver's.
			name: "preflushes beside requests at depth 1",
			change: func(r *model.Run) {
				d := depth1Disk(10000, 55e-6, 0.56)
				d.Ops = append(d.Ops, model.BlockOp{Op: "preflush", Requests: 1000, ServiceMeanSec: 2e-3,
					Size: hist(1000), Queue: hist(1000), Service: hist(1000)})
				r.Storage = &model.StorageIO{Devices: []model.BlockDevice{d}}
			},
		},
		{
			name: "an in-driver count that drifted",
			change: func(r *model.Run) {
				d := depth1Disk(10000, 55e-6, 0.56)
				d.DriverDrift = 3
				r.Storage = &model.StorageIO{Devices: []model.BlockDevice{d}}
			},
			want: []string{"sda: the block probe counted 3 more requests in the driver when it stopped than its request entries hold there"},
		},
		{
			name: "an older record's drift note",
			change: func(r *model.Run) {
				r.Storage = &model.StorageIO{Notes: []string{"the block probe's in-driver counts drifted (sda counted 2 in the driver for 0 requests): the depth histograms are off by that much"}}
			},
			want: []string{"sda counted 2 in the driver for 0 requests"},
		},

		// Findings against their own numbers.
		{
			name: "a finding without its test",
			change: func(r *model.Run) {
				r.Findings = []model.Finding{{ID: "io.random_small", Severity: "info"}}
			},
			want: []string{"io.random_small fired without the figure and threshold it was tested on"},
		},
		{
			name: "a warning without its share",
			change: func(r *model.Run) {
				r.Findings = []model.Finding{{ID: "threads.churn", Severity: "warning", Test: &model.FindingTest{Name: "x", Value: 200, Op: ">=", Threshold: 100}}}
			},
			want: []string{"threads.churn is a warning without the share of the busy threads' time its cause costs"},
		},
		{
			name: "a critical finding whose cause costs little",
			change: func(r *model.Run) {
				s := 0.05
				r.Findings = []model.Finding{{ID: "sync.dominant", Severity: "critical", Share: &s, Test: &model.FindingTest{Name: "x", Value: 0.6, Op: ">=", Threshold: 0.5}}}
			},
			want: []string{"sync.dominant is a critical, and its cause costs 5.0% of the busy threads' time"},
		},
		{
			name: "a finding whose figure fails its threshold",
			change: func(r *model.Run) {
				r.Findings = []model.Finding{{ID: "device.saturated", Severity: "info", Test: &model.FindingTest{Name: "deep share", Value: 0.3, Op: ">=", Threshold: 0.5}}}
			},
			want: []string{"device.saturated fired with deep share 0.3, which is not >= 0.5"},
		},
		{
			// The observer's warning weighs the distortion of the
			// workload's time, not a share of it; the check's own
			// finding has no threshold.
			name: "the observer's and the check's own findings",
			change: func(r *model.Run) {
				r.Findings = []model.Finding{
					{ID: "observer.overhead_high", Severity: "warning", Test: &model.FindingTest{Name: "x", Value: 0.06, Op: ">=", Threshold: 0.05}},
					{ID: "perfsleuth.inconsistent", Severity: "warning"},
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := consistentRun()
			Analyze(r)
			c.change(r)
			got := Inconsistencies(r)
			if len(got) != len(c.want) {
				t.Errorf("%d disagreements, want %d:\n  %s", len(got), len(c.want), strings.Join(got, "\n  "))
			}
			for _, w := range c.want {
				if !strings.Contains(strings.Join(got, "\n"), w) {
					t.Errorf("no %q in:\n  %s", w, strings.Join(got, "\n  "))
				}
			}
		})
	}
}

// hist is a histogram that holds n values.
func hist(n int64) []model.Range { return []model.Range{{Low: 0, High: 1, Count: n}} }

// depth1Disk is sda with n reads of the workload, each issued with no other
// request in the driver, serviceSec each, and the disk busy in the driver
// busySec.
func depth1Disk(n int64, serviceSec, busySec float64) model.BlockDevice {
	return model.BlockDevice{Name: "sda", Dev: "8:0", DriverBusySec: &busySec, Ops: []model.BlockOp{{
		Op: "read", Requests: n, Issued: n, Bytes: n * 4096, WorkloadRequests: n, WorkloadBytes: n * 4096,
		ServiceMeanSec: serviceSec, LatencyMeanSec: serviceSec + 5e-6, WorkloadServiceMeanSec: serviceSec, WorkloadLatencyMeanSec: serviceSec + 5e-6,
		Size: hist(n), Queue: hist(n), Service: hist(n), Depth: hist(n), WorkloadDepth: hist(n)}}}
}

// directReader is fio's psync O_DIRECT random reads at iodepth 1, observed
// with --syscalls: n reads of the workload on sda, each waited for inside
// a pread64 of callSec, serviceSec in the driver.
func directReader(n int64, serviceSec, callSec float64) *model.Run {
	th := thread(1, map[string]float64{"cpu": 1, "storage-read": 8, "sleep": 1})
	run := runWith(2, 10, th)
	ta := run.TimeAccounting
	ta.Waits = []model.Wait{
		{PID: 1, TID: 1, Activity: "read", Category: "storage-read", Waker: model.WakerDevice, Op: "read", Count: n, Seconds: 8},
		{PID: 1, TID: 1, Activity: "sleep", Category: "sleep", Waker: model.WakerTimer, Count: 100, Seconds: 1},
	}
	ta.Syscalls = []model.SyscallStat{{PID: 1, TID: 1, Name: "pread64", Count: n, TotalSec: float64(n) * callSec}}
	busy := float64(n) * serviceSec
	d := depth1Disk(n, serviceSec, busy)
	run.Storage = &model.StorageIO{FilesTraced: true, Devices: []model.BlockDevice{d}, Cache: &model.PageCache{HitRatio: -1}}
	return run
}

// A synchronous workload's device time never exceeds its own IO latency:
// only where the record shows its reads were all waited for in read calls.
func TestReadServiceWithinCalls(t *testing.T) {
	const n = 100000
	cases := []struct {
		name   string
		run    *model.Run
		change func(r *model.Run)
		want   string
	}{
		{name: "direct reads inside their calls", run: directReader(n, 50e-6, 80e-6)},
		{
			// Regression: fio psync O_DIRECT reads at iodepth 1: device
			// service 142 µs where fio's own completion latency was 55 µs.
			name: "direct reads longer in the driver than their calls took",
			run:  directReader(n, 142e-6, 55e-6),
			want: "sda: the workload's 100,000 read requests, one at a time, spent 14.2s in the driver (142µs each), more than its read calls (read, pread64, readv, preadv; --syscalls) took in all, 5.50s (100,000 calls, 55.0µs each)",
		},
		{
			name: "the files table's reads when there is no --syscalls",
			run:  directReader(n, 142e-6, 55e-6),
			change: func(r *model.Run) {
				r.TimeAccounting.Syscalls = nil
				r.Storage.Files = []model.FileIO{{Path: "/data/fio.0", Reads: model.FileOps{Count: n, Bytes: n * 4096, CallSec: n * 55e-6}}}
			},
			want: "more than its read calls on files (the files table) took in all, 5.50s",
		},
		{
			// fio on /dev/sdX: the files table holds regular files only.
			name: "reads of a device the files table does not see",
			run:  directReader(n, 142e-6, 55e-6),
			change: func(r *model.Run) {
				r.TimeAccounting.Syscalls = nil
				r.Storage.Files = []model.FileIO{{Path: "/etc/fio.conf", Reads: model.FileOps{Count: 10, Bytes: 40960, CallSec: 1e-4}}}
			},
		},
		{
			name:   "buffered reads that missed the page cache (readahead goes on without the call)",
			run:    directReader(n, 142e-6, 55e-6),
			change: func(r *model.Run) { r.Storage.Cache = &model.PageCache{Lookups: n, ReadAdded: n, ReadaheadSync: 10} },
		},
		{
			// --syscalls without --storage: a partial-page write's read
			// of its block is not in a read call, and is not told apart.
			name:   "pages added not counted",
			run:    directReader(n, 142e-6, 55e-6),
			change: func(r *model.Run) { r.Storage.Cache = &model.PageCache{HitRatio: -1, PagesNotCounted: true} },
		},
		{
			name:   "fadvise or madvise WILLNEED: pages added outside read calls",
			run:    directReader(n, 142e-6, 55e-6),
			change: func(r *model.Run) { r.Storage.Cache.OtherAdded = 32 },
		},
		{
			name: "swap-ins: waits for reads in page faults",
			run:  directReader(n, 142e-6, 55e-6),
			change: func(r *model.Run) {
				r.TimeAccounting.Waits = append(r.TimeAccounting.Waits, model.Wait{PID: 1, TID: 1, Activity: "fault", Category: "storage-read", Waker: model.WakerDevice, Op: "read", Count: 10, Seconds: 0.001})
			},
		},
		{
			name: "metadata reads waited for in opens and stats",
			run:  directReader(n, 142e-6, 55e-6),
			change: func(r *model.Run) {
				r.TimeAccounting.Waits = append(r.TimeAccounting.Waits, model.Wait{PID: 1, TID: 1, Activity: "open", Category: "storage-read", Waker: model.WakerDevice, Op: "read", Count: 10, Seconds: 0.001})
			},
		},
		{
			name: "asynchronous IO",
			run:  directReader(n, 142e-6, 55e-6),
			change: func(r *model.Run) {
				r.Storage.AsyncIO = []model.AsyncIO{{Interface: "io_uring", Reads: n, ReadBytes: n * 4096}}
			},
		},
		{
			name: "libaio seen as a syscall",
			run:  directReader(n, 142e-6, 55e-6),
			change: func(r *model.Run) {
				r.TimeAccounting.Syscalls = append(r.TimeAccounting.Syscalls, model.SyscallStat{PID: 1, TID: 1, Name: "io_submit", Count: 10, TotalSec: 1e-4})
			},
		},
		{
			name: "reads at depth 2",
			run:  directReader(n, 142e-6, 55e-6),
			change: func(r *model.Run) {
				o := &r.Storage.Devices[0].Ops[0]
				o.WorkloadDepth = []model.Range{{Low: 0, High: 1, Count: n / 2}, {Low: 2, High: 3, Count: n / 2}}
				o.Depth = o.WorkloadDepth
			},
		},
		{
			name:   "a record without the wait-for graph",
			run:    directReader(n, 142e-6, 55e-6),
			change: func(r *model.Run) { r.TimeAccounting.Waits = nil },
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.change != nil {
				c.change(c.run)
			}
			got := readServiceWithinCalls(c.run)
			if c.want == "" {
				if len(got) > 0 {
					t.Errorf("want no disagreement, got:\n  %s", strings.Join(got, "\n  "))
				}
				return
			}
			if len(got) != 1 || !strings.Contains(got[0], c.want) {
				t.Errorf("want one disagreement holding %q, got:\n  %s", c.want, strings.Join(got, "\n  "))
			}
		})
	}
}

// The rules whose severity follows what their cause costs: a warning at
// the material share, info below it or when the cost is unknown, and the
// figure they print holds their threshold either way.
func TestSeverityFollowsShare(t *testing.T) {
	churn := func(otherCPU float64, sampled bool) *model.Run {
		main := thread(1, map[string]float64{"cpu": 2, "sleep": 8})
		exited := thread(0, map[string]float64{"cpu": 2, "sleep": 1})
		exited.Exited, exited.Folded = true, 1999
		r := runWith(2, 10, main, exited)
		r.TimeAccounting.ThreadsCreated = 1999
		if sampled {
			r.TimeAccounting.ActivityHz = 499
			main.CPUByActivity = map[string]float64{"user": 2 - otherCPU, "other": otherCPU}
			r.TimeAccounting.Threads[0].CPUByActivity = main.CPUByActivity
			r.TimeAccounting.Threads[1].CPUByActivity = map[string]float64{"user": 2}
		}
		return r
	}
	tiny := func(writeCPU float64, sampled bool) *model.Run {
		th := thread(1, map[string]float64{"cpu": 10})
		r := runWith(2, 10, th)
		if sampled {
			r.TimeAccounting.ActivityHz = 499
			r.TimeAccounting.Threads[0].CPUByActivity = map[string]float64{"user": 10 - writeCPU, "write": writeCPU}
		}
		r.Observation = &model.Observation{DurationSec: 10, Totals: model.Totals{Process: model.ProcessUse{SyscW: 200000, WChar: 200000 * 64}}}
		return r
	}
	saturated := func(wait float64) *model.Run {
		// Three threads each running 6.5 s of 10 and waiting for a CPU
		// wait: (19.5 + 3 × wait) / 10 runnable on 2 CPUs.
		var ths []model.ThreadTime
		for i := 1; i <= 3; i++ {
			ths = append(ths, thread(i, map[string]float64{"cpu": 6.5, "cpu-wait": wait, "sleep": 3.5 - wait}))
		}
		return runWith(2, 10, ths...)
	}
	cases := []struct {
		name, id, severity string
		run                *model.Run
		evidence           string
	}{
		{"thread churn that costs 11.5% of the time", "threads.churn", "warning", churn(1.5, true), "on a CPU in clone, exit, mmap and the other syscalls of that class: 1.500s, 11.5% of 13.000s"},
		{"thread churn that costs 2% of the time", "threads.churn", "info", churn(0.26, true), "0.260s, 2.0% of 13.000s"},
		{"thread churn of unknown cost", "threads.churn", "info", churn(0, false), "what making and ending them cost is not known"},
		{"tiny writes that cost 20% of the time", "syscall.tiny_io", "warning", tiny(2, true), "on a CPU inside read and write calls: 2.000s, 20.0% of 10.000s"},
		{"tiny writes that cost 1% of the time", "syscall.tiny_io", "info", tiny(0.1, true), "0.100s, 1.0% of 10.000s"},
		{"tiny writes of unknown cost", "syscall.tiny_io", "info", tiny(0, false), "what the calls cost is not known"},
		// Regression: "more runnable threads than CPUs" warned with the
		// runnable threads waiting for a CPU under 10% of their time.
		{"demand just over the CPUs", "cpu.saturated", "info", saturated(0.3), "they waited for a CPU 3% of their time"},
		{"demand well over the CPUs", "cpu.saturated", "warning", saturated(2), "they waited for a CPU 20% of their time"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			Analyze(c.run)
			f := findingOf(c.run, c.id)
			if f == nil {
				t.Fatalf("%s not reported; findings %q", c.id, ids(c.run.Findings))
			}
			if f.Severity != c.severity {
				t.Errorf("severity %s, want %s", f.Severity, c.severity)
			}
			if text := strings.Join(f.Evidence, "\n"); !strings.Contains(text, c.evidence) {
				t.Errorf("no %q in\n%s", c.evidence, text)
			}
			if f.Test == nil || !testHolds(*f.Test) {
				t.Errorf("test %+v does not hold", f.Test)
			}
			if inc := findingOf(c.run, "perfsleuth.inconsistent"); inc != nil {
				t.Errorf("the run disagrees with itself: %q", inc.Evidence)
			}
		})
	}
}

// TestKernelAgreementAllowsEachRun: the schedstat check allows each run on
// a CPU its few µs (model.KernelSliceSec): a quiet fdatasync loop, 6.5%
// apart over 12,096 runs, agrees; a record without the count of runs
// (made before it was kept) is held to 5%.
func TestKernelAgreementAllowsEachRun(t *testing.T) {
	ta := &model.TimeAccounting{Kernel: &model.KernelAgreement{Checks: []model.KernelCheck{
		{What: "cpu + cpu-wait", Source: "schedstat", Threads: 1, PerfsleuthSec: 0.2564, KernelSec: 0.2398, Judged: true, Runs: 12096},
	}}}
	if got := kernelAgreementOf(ta); len(got) != 0 {
		t.Errorf("disagreements %q, want none over 12,096 runs", got)
	}
	ta.Kernel.Checks[0].Runs = 0
	if got := kernelAgreementOf(ta); len(got) != 1 {
		t.Errorf("disagreements %q, want one without the runs", got)
	}
}

// TestKernelAgreementTakesOffUncharged: a CI run's TCP client/server pair,
// 0.532 s on or queued for a CPU here against schedstat's 0.323 s, of
// which 0.209 s the kernel did not charge (steal): agreeing once that is
// taken off, and the disagreement, when it is not enough, names both.
func TestKernelAgreementTakesOffUncharged(t *testing.T) {
	ta := &model.TimeAccounting{Kernel: &model.KernelAgreement{Checks: []model.KernelCheck{
		{What: "cpu + cpu-wait", Source: "schedstat", Threads: 1, PerfsleuthSec: 0.532, KernelSec: 0.323, Judged: true, Runs: 3703, UnchargedSec: 0.209},
	}}}
	if got := kernelAgreementOf(ta); len(got) != 0 {
		t.Errorf("disagreements %q, want none with the steal taken off", got)
	}
	ta.Kernel.Checks[0].UnchargedSec = 0.05
	got := kernelAgreementOf(ta)
	if len(got) != 1 || !strings.Contains(got[0], "perfsleuth 0.482s (0.532s less 0.050s the kernel did not charge") {
		t.Errorf("disagreements %q, want one naming 0.482s charged of 0.532s", got)
	}
	// With the lag after the kernel ended runs taken off too, the figure
	// printed follows from both.
	ta.Kernel.Checks[0].CutLagSec = 0.02
	got = kernelAgreementOf(ta)
	if len(got) != 1 || !strings.Contains(got[0], "perfsleuth 0.462s (0.532s less 0.050s the kernel did not charge: steal, interrupts, and 0.020s after the kernel had ended runs that blocked)") {
		t.Errorf("disagreements %q, want one naming 0.462s charged of 0.532s", got)
	}
}

// TestSamplesVsCPUWithSteal: on-CPU samples at 99 Hz against 2 s of cpu
// (198 expected). 120 samples are too few, unless 0.8 s of the cpu was
// measured as steal, when the vCPU did not run and its timer fired once
// on its return; and more samples than the cpu at their rate are never
// explained by steal.
func TestSamplesVsCPUWithSteal(t *testing.T) {
	for _, tc := range []struct {
		name     string
		samples  int64
		steal    float64
		measured bool
		want     int
	}{
		{"as many as the cpu", 198, 0, true, 0},
		{"too few, no steal", 120, 0, true, 1},
		{"too few, steal measured", 120, 0.8, true, 0},
		{"too few, steal not measured", 120, 0.8, false, 1},
		{"too many, whatever the steal", 300, 0.8, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th := thread(1, map[string]float64{"cpu": 2})
			th.StealSec = tc.steal
			ta := &model.TimeAccounting{OnCPUHz: 99, OnCPUSamples: tc.samples, StealMeasured: tc.measured, Threads: []model.ThreadTime{th}}
			if got := samplesVsCPU(ta); len(got) != tc.want {
				t.Errorf("disagreements %q, want %d", got, tc.want)
			}
		})
	}
}
