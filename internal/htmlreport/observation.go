package htmlreport

import (
	"fmt"
	"math"
	"sort"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/report/rows"
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
	samples := rows.Timeline(o)
	n := len(samples)
	x := make([]float64, n)
	for i, sm := range samples {
		x[i] = sm.TSec
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
	busy := cpuSeries(rows.Busy)
	iowait := cpuSeries(func(c model.CPUUse) float64 { return c.IOWait })
	perSec := func(f func(rows.Sample) float64) []float64 {
		y := make([]float64, n)
		for i, sm := range samples {
			y[i] = f(sm)
		}
		return y
	}
	figs := []figure{
		{Caption: "CPU busy %", Sub: "the whole machine's, per CPU (not idle, not iowait)", Chart: LineChart("timeline-cpu-busy", x, busy,
			LineOptions{Title: "CPU busy percent", YUnit: UnitPercent, XLabel: "s", YMax: 100, Legend: legend})},
		{Caption: "CPU iowait %", Sub: "idle with IO outstanding", Chart: LineChart("timeline-cpu-iowait", x, iowait,
			LineOptions{Title: "CPU iowait percent", YUnit: UnitPercent, XLabel: "s", Legend: legend})},
		{Caption: "Workload CPU", Sub: "CPUs busy with its process tree", Chart: LineChart("timeline-process-cpu", x, []Series{
			{Label: "user", Color: CategoryColor(model.CatCPU), Y: perSec(func(s rows.Sample) float64 { return s.UserCPUs })},
			{Label: "system", Color: "#e0723a", Y: perSec(func(s rows.Sample) float64 { return s.SystemCPUs })},
		}, LineOptions{Title: "workload CPUs", XLabel: "s", Legend: true})},
		{Caption: "Workload context switches per second", Sub: "voluntary: blocked; involuntary: preempted", Chart: LineChart("timeline-process-ctxsw", x, []Series{
			{Label: "voluntary", Color: "#6aa96a", Y: perSec(func(s rows.Sample) float64 { return s.VolPerSec })},
			{Label: "involuntary", Color: "#c0392b", Y: perSec(func(s rows.Sample) float64 { return s.InvolPerSec })},
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
		for _, c := range rows.CPUs(t.CPUs) {
			tb.add(cell{Text: c.Name}, dec1(c.User), dec1(c.System), dec1(c.IOWait), dec1(c.IRQ), dec1(c.Steal), dec1(c.Idle))
		}
		s.table(tb.t)
	}
	p := rows.ProcessOf(o, run.Storage, rows.Units{Dur: durSec})
	s.h3("The workload's process tree")
	k := []kv{{"processes", p.Workload}, {"switches", p.Switches}, {"io", p.IO}}
	if p.Storage != "" {
		k = append(k, kv{"storage", p.Storage})
	}
	if p.IODelay != "" {
		k = append(k, kv{"io delay", p.IODelay})
	}
	if p.RunDelay != "" {
		k = append(k, kv{"run delay", p.RunDelay})
	}
	if o.DelayAcct != "" {
		k = append(k, kv{"delay accounting", o.DelayAcct})
	}
	s.kvs(k)
	if len(t.Threads) > 0 {
		threads, exited := rows.ProcThreads(t.Threads, maxThreadRows)
		title := "Threads, by CPU time"
		if threads.More() > 0 {
			title = fmt.Sprintf("Threads, the %d of %d with the most CPU time", len(threads.Rows), threads.Total)
		}
		s.h3(title)
		tb := newTable("pid", "tid", "~comm", "user", "sys", "vol cs", "invol cs", "run delay", "io delay")
		for _, th := range threads.Rows {
			comm := rows.ThreadName(th.Comm, th.Title)
			if th.Exited {
				comm += " †"
			}
			runDelay := "-"
			if th.SchedStat {
				runDelay = durSec(th.RunDelaySec)
			}
			tb.add(cell{Text: fmt.Sprint(th.PID)}, cell{Text: fmt.Sprint(th.TID)}, cell{Text: comm, Class: "mono"},
				cell{Text: durSec(th.UserSec)}, cell{Text: durSec(th.SystemSec)}, cell{Text: units.FormatCount(th.VolCtxSw)},
				cell{Text: units.FormatCount(th.InvolCtxSw)}, cell{Text: runDelay}, cell{Text: durSec(th.IODelaySec)})
		}
		if exited {
			tb.t.Foot = "† exited during the window"
		}
		s.table(tb.t)
	}
	if len(t.Disks) > 0 {
		s.h3("Disks (iostat -x over the window)")
		tb := newTable("device", "r/s", "w/s", "rMB/s", "wMB/s", "rrqm/s", "wrqm/s", "KiB/req", "queue", "r_await ms", "w_await ms", "%util")
		for _, d := range t.Disks {
			tb.add(cell{Text: d.Device}, dec1(d.ReadsPerSec), dec1(d.WritesPerSec), dec1(d.ReadMBps), dec1(d.WriteMBps), dec1(d.RMergedPerSec),
				dec1(d.WMergedPerSec), dec1(d.AvgRqKiB), dec1(d.AvgQueue), dec1(d.RAwaitMs), dec1(d.WAwaitMs), dec1(d.UtilPct))
		}
		s.table(tb.t)
	}
	if txt := rows.Overhead(run, o, rows.Units{Dur: durSec}, false); txt != "" {
		s.h3("Overhead")
		s.p(txt)
	}
	if len(o.Missing) > 0 {
		s.h3("Not visible to this observer")
		s.list(o.Missing)
	}
}

// dec1 is a number cell with one decimal.
func dec1(v float64) cell { return cell{Text: fmt.Sprintf("%.1f", v)} }
