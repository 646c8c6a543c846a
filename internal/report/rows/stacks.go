package rows

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/symbolize"
)

// OffCPU is the stacks the busy threads slept in.
type OffCPU struct {
	// Taken is false when the run took no stacks (observed without
	// --stacks).
	Taken bool
	// Stacks are in the record's order, longest first.
	Stacks []OffCPUStack
	// Groups sum the stacks per category, in display order, then the
	// categories this version does not know, by name.
	Groups []OffCPUGroup
	// IdleSec is the idle threads' sleep, whose stacks are left out.
	IdleSec float64
}

// OffCPUStack is one stack slept in: where, how long, how often.
type OffCPUStack struct {
	model.OffCPUStack
	// Comm names the thread (from the accounting), or "pid N".
	Comm string
}

// OffCPUGroup is a category's stacks and their sum.
type OffCPUGroup struct {
	Category string
	Seconds  float64
	Count    int64
	Stacks   []OffCPUStack
}

// OffCPUOf groups the off-CPU stacks.
func OffCPUOf(ta *model.TimeAccounting) OffCPU {
	o := OffCPU{Taken: ta.OffCPU != nil, IdleSec: ta.OffCPUIdleSec}
	comms := map[int]string{}
	for _, t := range ta.Threads {
		comms[t.TID] = t.Comm
	}
	by := map[string]*OffCPUGroup{}
	for _, st := range ta.OffCPU {
		s := OffCPUStack{st, comms[st.TID]}
		if s.Comm == "" {
			s.Comm = fmt.Sprintf("pid %d", st.PID)
		}
		o.Stacks = append(o.Stacks, s)
		g := by[st.Category]
		if g == nil {
			g = &OffCPUGroup{Category: st.Category}
			by[st.Category] = g
		}
		g.Seconds += st.Seconds
		g.Count += st.Count
		g.Stacks = append(g.Stacks, s)
	}
	var other []string
	for c := range by {
		if !slices.Contains(model.Categories, c) {
			other = append(other, c)
		}
	}
	slices.Sort(other)
	for _, c := range append(slices.Clone(model.Categories), other...) {
		if g := by[c]; g != nil {
			o.Groups = append(o.Groups, *g)
		}
	}
	return o
}

// Longest is the stacks in the record's order (longest first), at most n
// of each category.
func (o OffCPU) Longest(n int) []OffCPUStack {
	shown := map[string]int{}
	var out []OffCPUStack
	for _, s := range o.Stacks {
		if shown[s.Category] == n {
			continue
		}
		shown[s.Category]++
		out = append(out, s)
	}
	return out
}

// OnCPU is where the threads ran: the samples of their stacks.
type OnCPU struct {
	// Taken is false when the run took no samples; Note says why.
	Taken bool
	Note  string
	Hz    int
	// Rate says how they were taken: "at 99 Hz" (cpu-clock, on every
	// CPU), "at the scheduler tick, 50 Hz per busy CPU" (the tick).
	Rate string
	// Samples counts them all; CPUSec is their CPU time (Samples/Hz, or
	// Samples when Hz is unknown); Kept the samples of the stacks the
	// record kept (the most sampled ones), which Funcs share out.
	Samples, Kept int64
	CPUSec        float64
	// Funcs are the functions the samples fell in, most samples first.
	Funcs List[FuncShare]
	// Stacks are the record's, hottest first.
	Stacks []model.OnCPUStack
}

// FuncShare is the samples that fell in one function (its self time).
type FuncShare struct {
	Name    string
	Samples int64
	// Pct is its share of all samples, in percent.
	Pct float64
}

// OnCPUOf sums the on-CPU samples by the function they fell in: the
// innermost frame, the kernel's when the sample hit the kernel, as perf
// report --no-children does; at most maxFuncs functions.
func OnCPUOf(ta *model.TimeAccounting, maxFuncs int) OnCPU {
	o := OnCPU{Taken: ta.OnCPU != nil, Note: ta.OnCPUNote, Hz: ta.OnCPUHz, Stacks: ta.OnCPU}
	self := map[string]int64{}
	for _, s := range ta.OnCPU {
		o.Kept += s.Samples
		leaf := "[unknown]"
		switch {
		case len(s.Kernel) > 0:
			leaf = symbolize.Function(s.Kernel[0]) + " [k]"
		case len(s.User) > 0:
			leaf = symbolize.Function(s.User[0])
		}
		self[leaf] += s.Samples
	}
	// Records made before the total was kept have only the kept stacks'.
	o.Samples = max(ta.OnCPUSamples, o.Kept)
	o.CPUSec = float64(o.Samples) / float64(max(o.Hz, 1))
	o.Rate = fmt.Sprintf("at %d Hz", o.Hz)
	if ta.OnCPUSource == model.OnCPUTick {
		// Shares of the threads' exact cpu time (model.OnCPUTick).
		o.Rate = fmt.Sprintf("at the scheduler tick, %d Hz per busy CPU", o.Hz)
		o.CPUSec = 0
		for _, s := range ta.OnCPU {
			o.CPUSec += s.Seconds
		}
	}
	names := slices.Collect(maps.Keys(self))
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(self[b], self[a]), strings.Compare(a, b)) })
	l := first(names, maxFuncs)
	o.Funcs.Total = l.Total
	for _, n := range l.Rows {
		o.Funcs.Rows = append(o.Funcs.Rows, FuncShare{n, self[n], 100 * float64(self[n]) / float64(max(o.Kept, 1))})
	}
	return o
}
