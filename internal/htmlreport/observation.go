package htmlreport

import (
	"fmt"
	"math"
	"sort"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// maxThreadRows bounds the /proc threads table; maxCPULines the CPUs drawn
// each in its own colour with a legend entry (past it they are grey lines
// behind the all-CPU average).
const (
	maxThreadRows = 30
	maxCPULines   = 8
)

// seriesColors are the colours of lines that have no meaning of their own
// (CPUs, disks), chosen to stay apart from each other.
var seriesColors = []string{"#3a78c9", "#e0723a", "#4f8a5b", "#8b5fbf", "#c0392b", "#2a8c82", "#c98a12", "#7a6a58"}

// observationSection shows what /proc and /sys showed over the window: the
// timelines first, then the totals.
func observationSection(run *model.Run) *section {
	s := &section{ID: "observation", Title: "Observation (/proc, iostat)"}
	o := run.Observation
	if o == nil {
		s.Why = "no /proc observation: this run was only measured (bench); observe or diagnose it to sample /proc and /sys"
		return s
	}
	s.p(fmt.Sprintf("%s every %s over %s, %d samples", o.Source, durSec(o.IntervalSec), durSec(o.DurationSec), len(o.Timeline)))
	s.h3("Timeline")
	if len(o.Timeline) < 2 {
		s.why(fmt.Sprintf("no timeline: %d sample(s), the run was shorter than two sampling intervals (--interval %s); the totals follow",
			len(o.Timeline), durSec(o.IntervalSec)))
	} else {
		timelines(s, o)
	}
	totals(s, run, o)
	return s
}

// timelines draws the machine's CPUs, the workload's CPU and context
// switches, and each disk's iostat figures over the samples.
func timelines(s *section, o *model.Observation) {
	n := len(o.Timeline)
	x := make([]float64, n)
	dt := make([]float64, n)
	for i, sm := range o.Timeline {
		x[i] = sm.TSec
		switch {
		case i > 0:
			dt[i] = sm.TSec - o.Timeline[i-1].TSec
		case sm.TSec > 0:
			dt[i] = sm.TSec
		default:
			dt[i] = o.IntervalSec
		}
	}
	// CPUs in the order they first appear, the average (-1) first.
	var cpus []int
	seen := map[int]bool{}
	for _, sm := range o.Timeline {
		for _, c := range sm.CPUs {
			if !seen[c.CPU] {
				seen[c.CPU] = true
				cpus = append(cpus, c.CPU)
			}
		}
	}
	sort.Ints(cpus)
	cpuSeries := func(f func(model.CPUUse) float64) []Series {
		var out []Series
		for i, id := range cpus {
			y := make([]float64, n)
			for j, sm := range o.Timeline {
				y[j] = math.NaN()
				for _, c := range sm.CPUs {
					if c.CPU == id {
						y[j] = f(c)
					}
				}
			}
			sr := Series{Label: fmt.Sprintf("cpu%d", id), Y: y, Color: seriesColors[i%len(seriesColors)]}
			switch {
			case id < 0:
				sr.Label, sr.Color, sr.Bold = "all", "#1d2026", true
			case len(cpus) > maxCPULines+1:
				sr.Color = "#b8bdc4"
			}
			out = append(out, sr)
		}
		// Draw the average last, on top.
		sort.SliceStable(out, func(i, j int) bool { return !out[i].Bold && out[j].Bold })
		return out
	}
	legend := len(cpus) <= maxCPULines+1
	busy := cpuSeries(func(c model.CPUUse) float64 { return max(100-c.Idle-c.IOWait, 0) })
	iowait := cpuSeries(func(c model.CPUUse) float64 { return c.IOWait })
	perSec := func(f func(model.ProcessUse) float64) []float64 {
		y := make([]float64, n)
		for i, sm := range o.Timeline {
			if dt[i] > 0 {
				y[i] = f(sm.Process) / dt[i]
			}
		}
		return y
	}
	figs := []figure{
		{Caption: "CPU busy %", Sub: "the whole machine's, per CPU (not idle, not iowait)", Chart: LineChart("timeline-cpu-busy", x, busy,
			LineOptions{Title: "CPU busy percent", YUnit: UnitPercent, XLabel: "s", YMax: 100, Legend: legend})},
		{Caption: "CPU iowait %", Sub: "idle with IO outstanding", Chart: LineChart("timeline-cpu-iowait", x, iowait,
			LineOptions{Title: "CPU iowait percent", YUnit: UnitPercent, XLabel: "s", Legend: legend})},
		{Caption: "Workload CPU", Sub: "CPUs busy with its process tree", Chart: LineChart("timeline-process-cpu", x, []Series{
			{Label: "user", Color: CategoryColor(model.CatCPU), Y: perSec(func(p model.ProcessUse) float64 { return p.UserSec })},
			{Label: "system", Color: "#e0723a", Y: perSec(func(p model.ProcessUse) float64 { return p.SystemSec })},
		}, LineOptions{Title: "workload CPUs", XLabel: "s", Legend: true})},
		{Caption: "Workload context switches per second", Sub: "voluntary: blocked; involuntary: preempted", Chart: LineChart("timeline-process-ctxsw", x, []Series{
			{Label: "voluntary", Color: "#6aa96a", Y: perSec(func(p model.ProcessUse) float64 { return float64(p.VolCtxSw) })},
			{Label: "involuntary", Color: "#c0392b", Y: perSec(func(p model.ProcessUse) float64 { return float64(p.InvolCtxSw) })},
		}, LineOptions{Title: "context switches per second", XLabel: "s", Legend: true})},
	}
	var disks []string
	seenDisk := map[string]bool{}
	for _, sm := range o.Timeline {
		for _, d := range sm.Disks {
			if !seenDisk[d.Device] {
				seenDisk[d.Device] = true
				disks = append(disks, d.Device)
			}
		}
	}
	for _, name := range disks {
		get := func(f func(model.DiskUse) float64) []float64 {
			y := make([]float64, n)
			for i, sm := range o.Timeline {
				y[i] = math.NaN()
				for _, d := range sm.Disks {
					if d.Device == name {
						y[i] = f(d)
					}
				}
			}
			return y
		}
		figs = append(figs,
			figure{Caption: name + ": requests per second", Chart: LineChart(chartName("timeline-disk", name, "iops"), x, []Series{
				{Label: "r/s", Color: CategoryColor(model.CatStorageRead), Y: get(func(d model.DiskUse) float64 { return d.ReadsPerSec })},
				{Label: "w/s", Color: CategoryColor(model.CatStorageWrite), Y: get(func(d model.DiskUse) float64 { return d.WritesPerSec })},
			}, LineOptions{Title: name + " requests per second", XLabel: "s", Legend: true})},
			figure{Caption: name + ": %util", Sub: "time with a request in flight", Chart: LineChart(chartName("timeline-disk", name, "util"), x, []Series{
				{Label: "%util", Color: "#8b5fbf", Y: get(func(d model.DiskUse) float64 { return d.UtilPct })},
			}, LineOptions{Title: name + " utilisation", YUnit: UnitPercent, XLabel: "s", YMax: 100})},
			figure{Caption: name + ": await (ms)", Sub: "mean time per request, queue included", Chart: LineChart(chartName("timeline-disk", name, "await"), x, []Series{
				{Label: "r_await", Color: CategoryColor(model.CatStorageRead), Y: get(func(d model.DiskUse) float64 { return d.RAwaitMs })},
				{Label: "w_await", Color: CategoryColor(model.CatStorageWrite), Y: get(func(d model.DiskUse) float64 { return d.WAwaitMs })},
			}, LineOptions{Title: name + " await in ms", XLabel: "s", Legend: true})},
		)
	}
	s.figs(figs...)
}

// totals shows the window's totals: CPUs, the workload's process tree, its
// threads and the disks, then the observer's cost and blind spots.
func totals(s *section, run *model.Run, o *model.Observation) {
	t := o.Totals
	if len(t.CPUs) > 0 {
		s.h3("CPUs over the window")
		tb := newTable("cpu", "user %", "sys %", "iowait %", "irq %", "steal %", "idle %")
		for _, c := range t.CPUs {
			name := fmt.Sprintf("cpu%d", c.CPU)
			if c.CPU < 0 {
				name = "all"
			}
			f := func(v float64) cell { return cell{Text: fmt.Sprintf("%.1f", v)} }
			tb.add(cell{Text: name}, f(c.User+c.Nice), f(c.System), f(c.IOWait), f(c.IRQ+c.SoftIRQ), f(c.Steal), f(c.Idle))
		}
		s.table(tb.t)
	}
	p := t.Process
	s.h3("The workload's process tree")
	cpuShare := ""
	if o.DurationSec > 0 {
		cpuShare = fmt.Sprintf(" (%.2f CPUs busy on average)", (p.UserSec+p.SystemSec)/o.DurationSec)
	}
	k := []kv{
		{"processes", fmt.Sprintf("%d process(es), %d thread(s); CPU user %s, system %s%s", p.Processes, p.Threads, durSec(p.UserSec), durSec(p.SystemSec), cpuShare)},
		{"switches", fmt.Sprintf("%s voluntary (blocked), %s involuntary (preempted)", units.FormatCount(p.VolCtxSw), units.FormatCount(p.InvolCtxSw))},
		{"io", fmt.Sprintf("read %s from storage of %s asked (%s read calls); wrote %s to storage of %s (%s write calls)",
			units.FormatSize(p.ReadBytes), units.FormatSize(p.RChar), units.FormatCount(p.SyscR),
			units.FormatSize(p.WriteBytes), units.FormatSize(p.WChar), units.FormatCount(p.SyscW))},
	}
	if p.IODelaySec > 0 {
		k = append(k, kv{"io delay", durSec(p.IODelaySec) + " blocked on block IO (delay accounting)"})
	}
	if p.RunDelaySec > 0 {
		k = append(k, kv{"run delay", durSec(p.RunDelaySec) + " runnable but waiting for a CPU (schedstat)"})
	}
	if o.DelayAcct != "" {
		k = append(k, kv{"delay accounting", o.DelayAcct})
	}
	s.kvs(k)
	if len(t.Threads) > 0 {
		sorted := append([]model.ThreadUse(nil), t.Threads...)
		sort.SliceStable(sorted, func(i, j int) bool {
			return sorted[i].UserSec+sorted[i].SystemSec > sorted[j].UserSec+sorted[j].SystemSec
		})
		title := "Threads, by CPU time"
		if len(sorted) > maxThreadRows {
			title = fmt.Sprintf("Threads, the %d of %d with the most CPU time", maxThreadRows, len(sorted))
			sorted = sorted[:maxThreadRows]
		}
		s.h3(title)
		tb := newTable("pid", "tid", "~comm", "user", "sys", "vol cs", "invol cs", "run delay", "io delay")
		for _, th := range sorted {
			comm := th.Comm
			if th.Exited {
				comm += " †"
				tb.t.Foot = "† exited during the window"
			}
			runDelay := "-"
			if th.SchedStat {
				runDelay = durSec(th.RunDelaySec)
			}
			tb.add(cell{Text: fmt.Sprint(th.PID)}, cell{Text: fmt.Sprint(th.TID)}, cell{Text: comm, Class: "mono"},
				cell{Text: durSec(th.UserSec)}, cell{Text: durSec(th.SystemSec)}, cell{Text: units.FormatCount(th.VolCtxSw)},
				cell{Text: units.FormatCount(th.InvolCtxSw)}, cell{Text: runDelay}, cell{Text: durSec(th.IODelaySec)})
		}
		s.table(tb.t)
	}
	if len(t.Disks) > 0 {
		s.h3("Disks (iostat -x over the window)")
		tb := newTable("device", "r/s", "w/s", "rMB/s", "wMB/s", "rrqm/s", "wrqm/s", "KiB/req", "queue", "r_await ms", "w_await ms", "%util")
		for _, d := range t.Disks {
			f := func(v float64) cell { return cell{Text: fmt.Sprintf("%.1f", v)} }
			tb.add(cell{Text: d.Device}, f(d.ReadsPerSec), f(d.WritesPerSec), f(d.ReadMBps), f(d.WriteMBps), f(d.RMergedPerSec),
				f(d.WMergedPerSec), f(d.AvgRqKiB), f(d.AvgQueue), f(d.RAwaitMs), f(d.WAwaitMs), f(d.UtilPct))
		}
		s.table(tb.t)
	}
	if o.DurationSec > 0 {
		txt := fmt.Sprintf("/proc sampling used %s of CPU (%.2f%% of one CPU)", durSec(o.ObserverCPUSec), o.ObserverCPUSec/o.DurationSec*100)
		if ta := run.TimeAccounting; ta != nil && ta.Source == "ebpf" {
			txt += fmt.Sprintf("; the eBPF programs ran %s times for an estimated %s of CPU in all (%.2f%% of one CPU)",
				units.FormatCount(ta.ProbeRuns), durSec(ta.ProbeCPUSec), ta.ProbeCPUSec/o.DurationSec*100)
			if ta.ProbeNote != "" {
				txt += "; " + ta.ProbeNote
			}
		}
		s.h3("Overhead")
		s.p(txt)
	}
	if len(o.Missing) > 0 {
		s.h3("Not visible to this observer")
		s.list(o.Missing)
	}
}
