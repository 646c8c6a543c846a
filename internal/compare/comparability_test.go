package compare

import (
	"slices"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

func TestIssueRules(t *testing.T) {
	cases := []struct {
		name string
		a, b func() *model.Run
		// change B (or both) before comparing
		edit     func(a, b *model.Run)
		id       string // the issue that must be there ("" none at all)
		severity string
		a2, b2   string // its A and B words, when checked
	}{
		{name: "identical runs", a: sqliteRun, b: sqliteRun, edit: func(a, b *model.Run) {}},
		{name: "another working directory is not an issue", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) { b.Target.SQLite.Dir, b.Target.SQLite.Keep = "/elsewhere", true }},
		{name: "workload kind", a: sqliteRun, b: fileioRun, edit: func(a, b *model.Run) {},
			id: "workload.kind", severity: NotComparable, a2: "sqlite", b2: "fileio"},
		{name: "interrupted", a: sqliteRun, b: sqliteRun, edit: func(a, b *model.Run) { b.Interrupted = true },
			id: "run.interrupted", severity: NotComparable, a2: "complete", b2: "interrupted"},
		{name: "sqlite sync settings", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) { b.Target.SQLite.Journal, b.Target.SQLite.Sync = "delete", "full" },
			id:   "settings.sync", severity: NotComparable, a2: "journal=wal sync=normal", b2: "journal=delete sync=full"},
		{name: "fileio fsync settings", a: fileioRun, b: fileioRun,
			edit: func(a, b *model.Run) { b.Target.FileIO.Fsync, b.Target.FileIO.Fdatasync = 1, true },
			id:   "settings.sync", severity: NotComparable, a2: "no syncs", b2: "fdatasync every 1 write(s)"},
		{name: "a command's observed sync calls 4x apart", a: commandRun, b: commandRun,
			edit: func(a, b *model.Run) { setSyncs(b, 4000, 2) },
			id:   "sync.behaviour", severity: NotComparable, a2: "1,000 sync calls per run", b2: "4,000 sync calls per run"},
		{name: "observed sync calls too few to tell", a: commandRun, b: commandRun,
			edit: func(a, b *model.Run) { setSyncs(a, 10, 0.01); setSyncs(b, 50, 0.05) }},
		{name: "observed sync calls 1.5x apart are the same behaviour", a: commandRun, b: commandRun,
			edit: func(a, b *model.Run) { setSyncs(b, 1500, 0.7) }},
		{name: "cold cache in B", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) { b.Storage.Cache.HitRatio = 0.3 },
			id:   "cache.cold", severity: NotComparable},
		{name: "cold cache in B, from /proc without --storage", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) {
				notCounted(a, 64<<20, 1<<20)
				notCounted(b, 64<<20, 60<<20)
			},
			id: "cache.cold", severity: NotComparable,
			a2: "about 0.98 of its reads from the cache (1 - 1 MiB fetched from devices / 64 MiB read, /proc/PID/io)",
			b2: "about 0.06 of its reads from the cache (1 - 60 MiB fetched from devices / 64 MiB read, /proc/PID/io)"},
		{name: "without --storage, few reads are not a cold cache", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) {
				notCounted(a, 1<<20, 0)
				notCounted(b, 1<<20, 1<<20)
			}},
		{name: "a cold start's few lookups are not a cold cache", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) {
				a.Storage.Cache.Lookups, b.Storage.Cache.Lookups, b.Storage.Cache.HitRatio = 500, 500, 0.3
			}},
		{name: "fileio thread count", a: fileioRun, b: fileioRun, edit: func(a, b *model.Run) { b.Target.FileIO.Threads = 1 },
			id: "settings.threads", severity: NotComparable, a2: "4", b2: "1"},
		{name: "fileio block size", a: fileioRun, b: fileioRun, edit: func(a, b *model.Run) { b.Target.FileIO.BS = 65536 },
			id: "settings.bs", severity: NotComparable, a2: "4KiB", b2: "64KiB"},
		{name: "sqlite rows", a: sqliteRun, b: sqliteRun, edit: func(a, b *model.Run) { b.Target.SQLite.Rows = 5000 },
			id: "settings.rows", severity: NotComparable, a2: "1000", b2: "5000"},
		{name: "sqlite seed", a: sqliteRun, b: sqliteRun, edit: func(a, b *model.Run) { b.Target.SQLite.Seed = 2 },
			id: "settings.seed", severity: KeepInMind},
		{name: "sqlite version", a: sqliteRun, b: sqliteRun, edit: func(a, b *model.Run) { b.Target.SQLite.SQLiteVersion = "3.45" },
			id: "settings.sqlite_version", severity: KeepInMind},
		{name: "command arguments", a: commandRun, b: commandRun, edit: func(a, b *model.Run) { b.Target.Command.Argv = []string{"./bench", "--slow"} },
			id: "settings.argv", severity: KeepInMind, a2: "./bench --fast", b2: "./bench --slow"},
		{name: "diagnose measures differ", a: commandRun, b: commandRun,
			edit: func(a, b *model.Run) {
				withRepeats(a, 0.01, 1, 1, 1)
				withRepeats(b, 0.01, 5, 5, 5)
				b.Experiments.Measure = model.Measure{Name: "score: ([0-9]+)", Source: "metric", HigherIsBetter: true}
			},
			id: "measure", severity: NotComparable},
		{name: "fileio reads of kept files against fresh ones", a: fileioRun, b: fileioRun,
			edit: func(a, b *model.Run) {
				a.Target.FileIO.RW, b.Target.FileIO.RW = "randread", "randread"
				b.Result.FileIO.Prepare.Reused = true
			},
			id: "cache.prepared", severity: KeepInMind},
		{name: "fileio writes do not care where the files came from", a: fileioRun, b: fileioRun,
			edit: func(a, b *model.Run) { b.Result.FileIO.Prepare.Reused = true }},
		{name: "machine", a: sqliteRun, b: sqliteRun, edit: func(a, b *model.Run) { b.Host.Hostname = "phone" },
			id: "host.hostname", severity: KeepInMind},
		{name: "kernel", a: sqliteRun, b: sqliteRun, edit: func(a, b *model.Run) { b.Host.Kernel = "6.6.0 #1 SMP" },
			id: "host.kernel", severity: KeepInMind},
		{name: "core types and frequencies", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) {
				b.Host.CPUs = []model.CPU{{ID: 0, Type: "Cortex-A53", MaxFreqKHz: 1800000, Governor: "schedutil"}, {ID: 1, Type: "Cortex-A73", MaxFreqKHz: 2360000, Governor: "schedutil"}}
			},
			id: "host.cpus", severity: KeepInMind, a2: "2x X", b2: "1x Cortex-A53 1.80 GHz (schedutil) + 1x Cortex-A73 2.36 GHz (schedutil)"},
		{name: "CPUs online", a: sqliteRun, b: sqliteRun, edit: func(a, b *model.Run) { b.Host.CPUsOnline = 8 },
			id: "host.cpus_online", severity: KeepInMind},
		{name: "memory twice as large", a: sqliteRun, b: sqliteRun, edit: func(a, b *model.Run) { b.Host.MemTotalBytes = 16 << 30 },
			id: "host.memory", severity: KeepInMind},
		{name: "steal 20% against 1% of the time on a CPU", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) { setSteal(a, 0.01); setSteal(b, 0.20) },
			id:   "host.steal", severity: KeepInMind, a2: "1% of the time on a CPU (0.010s of 1.000s)", b2: "20% of the time on a CPU (0.200s of 1.000s)"},
		{name: "steal 1% against 3% is the same host load", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) { setSteal(a, 0.01); setSteal(b, 0.03) }},
		{name: "steal measured on one side only is not compared", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) { setSteal(b, 0.20); a.TimeAccounting.StealMeasured = false }},
		{name: "memory a few MiB apart is the same", a: sqliteRun, b: sqliteRun, edit: func(a, b *model.Run) { b.Host.MemTotalBytes -= 8 << 20 }},
		{name: "file system", a: sqliteRun, b: sqliteRun, edit: func(a, b *model.Run) { b.Host.Storage.FSType = "f2fs" },
			id: "storage.fs_type", severity: KeepInMind, a2: "ext4", b2: "f2fs"},
		{name: "mount options: only the ones that differ", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) { b.Host.Storage.MountOptions = "rw,relatime,nobarrier" },
			id:   "storage.mount_options", severity: KeepInMind, a2: "none", b2: "nobarrier"},
		{name: "IO scheduler", a: sqliteRun, b: sqliteRun, edit: func(a, b *model.Run) { b.Host.Storage.Scheduler = "none" },
			id: "storage.scheduler", severity: KeepInMind, a2: "mq-deadline", b2: "none"},
		{name: "device", a: sqliteRun, b: sqliteRun, edit: func(a, b *model.Run) { b.Host.Storage.Device = "nvme0n1" },
			id: "storage.device", severity: KeepInMind},
		{name: "perfsleuth version", a: sqliteRun, b: sqliteRun, edit: func(a, b *model.Run) { b.Tool.Version = "v0.2" },
			id: "tool.version", severity: KeepInMind},
		{name: "accounting source", a: sqliteRun, b: sqliteRun, edit: func(a, b *model.Run) { b.TimeAccounting.Source = "procfs" },
			id: "observer.source", severity: KeepInMind, a2: "eBPF", b2: "procfs (no per-cause time)"},
		{name: "a bench record has no accounting", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) { b.TimeAccounting, b.Observation, b.Storage = nil, nil, nil },
			id:   "observer.source", severity: KeepInMind, b2: "none (bench)"},
		{name: "costly observer options on one side", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) { b.Tool.Args = []string{"observe", "--storage", "--json", "b.json", "sqlite"} },
			id:   "observer.options", severity: KeepInMind, a2: "none", b2: "--storage"},
		{name: "a workload flag is not an observer option", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) { b.Tool.Args = []string{"observe", "--", "./bench", "--stacks"} }},
		{name: "dropped events", a: sqliteRun, b: sqliteRun, edit: func(a, b *model.Run) { b.TimeAccounting.Dropped = 12 },
			id: "observer.dropped", severity: KeepInMind, a2: "0", b2: "12"},
		{name: "an experiment that stopped early", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) {
				withRepeats(a, 0.05, 500, 510, 490)
				withRepeats(b, 0.05, 500, 510, 490)
				b.Experiments.Incomplete = true
			},
			id: "experiments.incomplete", severity: KeepInMind},
		{name: "a single run against diagnose's median run", a: sqliteRun, b: sqliteRun,
			edit: func(a, b *model.Run) { withRepeats(b, 0.05, 500, 510, 490) },
			id:   "run.verb", severity: KeepInMind, a2: "observe", b2: "diagnose"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, b := tc.a(), tc.b()
			tc.edit(a, b)
			got := issues(a, b)
			if tc.id == "" {
				if len(got) > 0 {
					t.Fatalf("issues %v, want none: %+v", ids(got), got)
				}
				return
			}
			i := slices.IndexFunc(got, func(x Issue) bool { return x.ID == tc.id })
			if i < 0 {
				t.Fatalf("no %s among %v", tc.id, ids(got))
			}
			is := got[i]
			if is.Severity != tc.severity {
				t.Errorf("%s severity %q, want %q", tc.id, is.Severity, tc.severity)
			}
			if tc.a2 != "" && is.A != tc.a2 {
				t.Errorf("%s A %q, want %q", tc.id, is.A, tc.a2)
			}
			if tc.b2 != "" && is.B != tc.b2 {
				t.Errorf("%s B %q, want %q", tc.id, is.B, tc.b2)
			}
			if is.Why == "" || is.Aspect == "" {
				t.Errorf("%s says neither what nor why: %+v", tc.id, is)
			}
		})
	}
}

// The issue asks for the sync behaviour to be named before anything else:
// not-comparable issues come first, and among them the sync settings lead.
func TestSyncBehaviourIsNamedFirst(t *testing.T) {
	a, b := sqliteRun(), sqliteRun()
	b.Host.Kernel = "6.6.0 #1 SMP"
	b.Target.SQLite.Rows = 5000
	b.Target.SQLite.Journal, b.Target.SQLite.Sync = "delete", "full"
	b.Storage.Cache.HitRatio = 0.5
	got := ids(issues(a, b))
	want := []string{"settings.sync", "cache.cold", "settings.rows", "host.kernel"}
	if !slices.Equal(got, want) {
		t.Errorf("issues in order %v, want %v", got, want)
	}
	c := Compare(a, b)
	if c.Comparable {
		t.Error("Comparable with different sync settings")
	}
	if !strings.HasPrefix(c.Summary, "not comparable like for like (sync behaviour, ") {
		t.Errorf("summary does not lead with the sync behaviour: %q", c.Summary)
	}
}

func TestSyncIssueCitesTheObservedCounts(t *testing.T) {
	a, b := sqliteRun(), sqliteRun()
	b.Target.SQLite.Journal, b.Target.SQLite.Sync = "delete", "full"
	setSyncs(a, 5, 0.01)
	setSyncs(b, 4000, 1)
	is := issues(a, b)[0]
	if !strings.Contains(is.Why, "A made 0.005 sync calls per transaction and B 4") {
		t.Errorf("sync issue does not cite the counts per transaction: %q", is.Why)
	}
}

// notCounted makes r a run observed without --storage: no per-page counts,
// and its processes read rchar bytes, read bytes of them from devices.
func notCounted(r *model.Run, rchar, read int64) {
	r.Storage.Cache = &model.PageCache{HitRatio: -1, PagesNotCounted: true}
	r.Observation.Totals.Process.RChar, r.Observation.Totals.Process.ReadBytes = rchar, read
}
