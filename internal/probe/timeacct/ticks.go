package timeacct

import (
	"cmp"
	"fmt"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/probe"
	"github.com/perfsleuth/perfsleuth/internal/symbolize"
)

// tickOnCPU puts the stacks the scheduler ticks walked in the record's
// on-CPU samples (model.OnCPUTick), the tick's own interrupt frames taken
// off, each stack's seconds its share of the sampled threads' cpu time.
// --stacks replaces them with its cpu-clock samples (the profile probe).
func tickOnCPU(ta *model.TimeAccounting, r *Result, name func() *symbolize.Namer) {
	if !r.Sampled || r.TickStackEvery == 0 {
		return
	}
	ta.OnCPUSource = model.OnCPUTick
	ta.OnCPUHz = max(r.SampleHz, 1) / r.TickStackEvery
	ta.OnCPU = []model.OnCPUStack{}
	comm := map[int]string{}
	cpu := map[int]float64{}
	samples := map[int]uint64{}
	for _, t := range ta.Threads {
		comm[t.TID] = t.Comm
		cpu[t.TID] = t.Seconds[model.CatCPU]
	}
	var all uint64
	for _, s := range r.TickStacks {
		samples[s.TID] += s.Samples
		all += s.Samples
	}
	ta.OnCPUSamples, ta.OnCPUDropped = int64(all), int64(r.TickDropped)
	if all == 0 {
		ta.OnCPUNote = "no scheduler tick fell on the workload's threads while they ran and walked their stacks (one in " +
			fmt.Sprint(r.TickStackEvery) + " ticks does)"
		return
	}
	for i, s := range r.TickStacks {
		if i == probe.MaxStacks {
			break
		}
		o := model.OnCPUStack{PID: s.PID, TID: s.TID, Comm: comm[s.TID], Samples: int64(s.Samples), KernelNote: s.KernelErr, UserNote: s.UserErr}
		// A thread's share of its own samples, of its exact cpu time;
		// an exited thread (folded, not listed) at the samples' rate.
		if c, ok := cpu[s.TID]; ok && samples[s.TID] > 0 {
			o.Seconds = c * float64(s.Samples) / float64(samples[s.TID])
		} else {
			o.Seconds = float64(s.Samples) / float64(max(ta.OnCPUHz, 1))
		}
		var kn, un string
		o.Kernel, o.User, kn, un = name().Name(s.PID, s.Kernel, s.User)
		o.Kernel = pastInterrupt(o.Kernel)
		o.KernelNote, o.UserNote = cmp.Or(kn, o.KernelNote), cmp.Or(un, o.UserNote)
		ta.OnCPU = append(ta.OnCPU, o)
	}
}

// interruptEntries are the frames of an interrupt's entry on a kernel
// stack walked in its handler: the interrupted code comes after them.
var interruptEntries = []string{"asm_sysvec_apic_timer_interrupt", "asm_common_interrupt", "asm_sysvec_call_function_single",
	"asm_sysvec_reschedule_ipi", "sysvec_apic_timer_interrupt"}

// pastInterrupt drops the tick's own frames (the hrtimer's, up to the
// interrupt's entry) from a kernel stack walked in it; a stack with no
// entry frame is kept whole.
func pastInterrupt(frames []string) []string {
	last := -1
	for i, f := range frames {
		if isOneOf(symbolize.Function(f), interruptEntries) {
			last = i
		}
	}
	return frames[last+1:]
}
