package compare

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// The issues of the conditions around the workload: the machine, the file
// system, the observer and how the record was made. They are "keep in mind":
// they are often what a comparison is about (this phone against that one,
// this kernel against the last).

func hostIssues(a, b *model.Run) []Issue {
	ha, hb := a.Host, b.Host
	var out []Issue
	add := func(id, aspect, va, vb, why string) {
		if va != vb {
			out = append(out, Issue{ID: id, Severity: KeepInMind, Aspect: aspect, A: va, B: vb, Why: why})
		}
	}
	add("host.hostname", "machine", ha.Hostname, hb.Hostname, "different machines: every host difference below may play a part")
	add("host.kernel", "kernel", ha.Kernel, hb.Kernel, "the kernel's file systems, block layer and scheduler change between versions and builds")
	add("host.cpus", "CPU types and frequencies", cpuWords(ha), cpuWords(hb), "the same work takes another CPU time on other cores or clocks: the CPU time per unit of work below shows how much")
	if ha.CPUsOnline != hb.CPUsOnline {
		add("host.cpus_online", "CPUs online", fmt.Sprint(ha.CPUsOnline), fmt.Sprint(hb.CPUsOnline), "fewer CPUs leave less room for the workload's threads, its helpers and the kernel's own work")
	}
	if sa, sb, ok := stealShares(a, b); ok {
		add("host.steal", "time stolen by the hypervisor", sa, sb, "a thread on a virtual CPU the host gave to another guest counts as on CPU without running: cpu figures and throughput move with the host's load, not the workload's (analyze's cpu.steal)")
	}
	if ha.MemTotalBytes > 0 && hb.MemTotalBytes > 0 && ratio(float64(ha.MemTotalBytes), float64(hb.MemTotalBytes)) > 1+memTolerance {
		add("host.memory", "memory", units.FormatSize(ha.MemTotalBytes), units.FormatSize(hb.MemTotalBytes), "memory bounds the page cache: a working set that fits on one machine may not on the other")
	}
	return out
}

// cpuWords describes the CPUs as counts of each type, maximum frequency and
// governor, e.g. "4x Cortex-A53 1.80 GHz (schedutil) + 4x Cortex-A73 2.36 GHz".
func cpuWords(h model.Host) string {
	type key struct {
		typ string
		max int64
		gov string
	}
	counts := map[key]int{}
	var order []key
	for _, c := range h.CPUs {
		k := key{c.Type, c.MaxFreqKHz, c.Governor}
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k]++
	}
	var parts []string
	for _, k := range order {
		p := fmt.Sprintf("%dx %s", counts[k], k.typ)
		if k.max > 0 {
			p += fmt.Sprintf(" %.2f GHz", float64(k.max)/1e6)
		}
		if k.gov != "" {
			p += " (" + k.gov + ")"
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return h.CPUModel
	}
	return strings.Join(parts, " + ")
}

func storageIssues(a, b *model.Run) []Issue {
	sa, sb := a.Host.Storage, b.Host.Storage
	if sa == nil || sb == nil {
		return nil
	}
	var out []Issue
	add := func(id, aspect, va, vb, why string) {
		if va != vb {
			out = append(out, Issue{ID: id, Severity: KeepInMind, Aspect: aspect, A: va, B: vb, Why: why})
		}
	}
	add("storage.fs_type", "file system", sa.FSType, sb.FSType, "file systems differ in what a sync writes (journal, metadata, directory) and in how they allocate")
	if onlyA, onlyB := optionDiff(sa.MountOptions, sb.MountOptions); onlyA != "" || onlyB != "" {
		out = append(out, Issue{ID: "storage.mount_options", Severity: KeepInMind, Aspect: "mount options",
			A: orNone(onlyA), B: orNone(onlyB),
			Why: "only the options that differ are shown; options such as barrier, data=, commit=, discard and noatime change what a write and a sync cost"})
	}
	add("storage.scheduler", "IO scheduler", orNone(sa.Scheduler), orNone(sb.Scheduler), "the scheduler orders and merges requests: it changes latency under load more than a single request's")
	add("storage.device", "device", deviceWords(sa), deviceWords(sb), "a different device (or the same on other hardware) has its own latency and flush cost")
	return out
}

// optionDiff lists the mount options only one side has.
func optionDiff(a, b string) (onlyA, onlyB string) {
	sa, sb := strings.Split(a, ","), strings.Split(b, ",")
	var oa, ob []string
	for _, o := range sa {
		if !slices.Contains(sb, o) {
			oa = append(oa, o)
		}
	}
	for _, o := range sb {
		if !slices.Contains(sa, o) {
			ob = append(ob, o)
		}
	}
	return strings.Join(oa, ","), strings.Join(ob, ",")
}

func deviceWords(s *model.Storage) string {
	w := orNone(s.Device)
	if s.Rotational != nil {
		if *s.Rotational {
			w += ", rotational"
		} else {
			w += ", non-rotational"
		}
	}
	if s.SizeBytes > 0 {
		w += ", " + units.FormatSize(s.SizeBytes)
	}
	return w
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// observerIssues: what watched the runs, which costs time and decides what
// the comparison can set side by side.
func observerIssues(a, b *model.Run) []Issue {
	var out []Issue
	if va, vb := a.Tool.Version, b.Tool.Version; va != vb {
		out = append(out, Issue{ID: "tool.version", Severity: KeepInMind, Aspect: "perfsleuth version", A: va, B: vb,
			Why: "the benchmarks and the probes may have changed between versions"})
	}
	if sa, sb := observerWords(a), observerWords(b); sa != sb {
		out = append(out, Issue{ID: "observer.source", Severity: KeepInMind, Aspect: "time accounting", A: sa, B: sb,
			Why: "only what both records measured is set side by side: run both the same way (observe as root for eBPF)"})
	}
	if oa, ob := costlyOptions(a), costlyOptions(b); oa != ob {
		out = append(out, Issue{ID: "observer.options", Severity: KeepInMind, Aspect: "observer options", A: orNone(oa), B: orNone(ob),
			Why: "--storage and --syscalls hook every syscall on the machine and --stacks every sleep: the run with them pays their cost (docs/probes.md)"})
	}
	da, db := dropped(a), dropped(b)
	if da > 0 || db > 0 {
		out = append(out, Issue{ID: "observer.dropped", Severity: KeepInMind, Aspect: "events the probes dropped",
			A: units.FormatCount(da), B: units.FormatCount(db),
			Why: "a record with dropped events under-counts: its accounting and storage figures are lower bounds"})
	}
	return out
}

func observerWords(r *model.Run) string {
	switch {
	case r.TimeAccounting != nil && r.TimeAccounting.Source == "ebpf":
		return "eBPF"
	case r.TimeAccounting != nil:
		return r.TimeAccounting.Source + " (no per-cause time)"
	case r.Observation != nil:
		return "none: /proc sampling only"
	}
	return "none (bench)"
}

// costlyOptions lists the observe options that cost the workload time,
// from the record's command line (before the workload) or what it holds.
func costlyOptions(r *model.Run) string {
	var on []string
	args := r.Tool.Args
	for i, arg := range args {
		if arg == "--" || arg == r.Target.Kind {
			args = args[:i]
			break
		}
	}
	for _, opt := range []string{"--storage", "--syscalls", "--stacks"} {
		if slices.Contains(args, opt) || slices.Contains(args, opt+"=true") {
			on = append(on, opt)
		}
	}
	return strings.Join(on, " ")
}

func dropped(r *model.Run) int64 {
	var n int64
	if ta := r.TimeAccounting; ta != nil {
		n += ta.Dropped
	}
	if s := r.Storage; s != nil {
		n += s.Dropped.Requests + s.Dropped.FileOps + s.Dropped.SQLiteEvents
	}
	return n
}

func experimentIssues(a, b *model.Run) []Issue {
	var out []Issue
	if va, vb := verb(a), verb(b); (va == "diagnose") != (vb == "diagnose") {
		out = append(out, Issue{ID: "run.verb", Severity: KeepInMind, Aspect: "made by", A: va, B: vb,
			Why: "diagnose makes a warm-up run first and keeps the baseline run with the median result; a single run had no warm-up, so its caches may have been colder"})
	}
	inc := func(r *model.Run) string {
		if r.Experiments != nil && r.Experiments.Incomplete {
			return "stopped early"
		}
		return "complete"
	}
	if inc(a) != "complete" || inc(b) != "complete" {
		out = append(out, Issue{ID: "experiments.incomplete", Severity: KeepInMind, Aspect: "diagnose runs", A: inc(a), B: inc(b),
			Why: "an experiment that stopped early has fewer baseline runs than asked for, so its noise is less well known"})
	}
	return out
}

// stealTolerance: steal shares of the on-CPU time 5 points apart
// (cpu.steal's own threshold) are a difference in the host's load.
const stealTolerance = 0.05

// stealShares words each run's steal, as a share of its workload's on-CPU
// time, when both measured it and they are stealTolerance or more apart.
func stealShares(a, b *model.Run) (sa, sb string, ok bool) {
	// Steal is zero for a record that did not measure it: no share then.
	share := func(r *model.Run) (float64, string, bool) {
		s, cpu := r.TimeAccounting.Steal()
		if cpu <= 0 {
			return 0, "", false
		}
		return s / cpu, fmt.Sprintf("%.0f%% of the time on a CPU (%.3fs of %.3fs)", s/cpu*100, s, cpu), true
	}
	fa, sa, oka := share(a)
	fb, sb, okb := share(b)
	if !oka || !okb || math.Abs(fa-fb) < stealTolerance {
		return "", "", false
	}
	return sa, sb, true
}
