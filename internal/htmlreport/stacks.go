package htmlreport

import (
	"fmt"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/report/rows"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// stacksSection draws the on-CPU samples and the off-CPU sleeps as flame
// graphs: the thread name at the root, then the user stack from its
// outermost frame, then the kernel stack down to where the thread ran or
// went to sleep.
func stacksSection(run *model.Run) *section {
	s := &section{ID: "stacks", Title: "Stacks"}
	ta := run.TimeAccounting
	if ta == nil {
		s.Why = "no stacks: they are taken while observing (observe or diagnose with --stacks)"
		return s
	}
	s.p("Icicle graphs: the root on top, each frame as wide as its share, callees below their callers. " +
		"Hover a frame for its figures, click it to zoom in, click the top row to zoom out.")

	s.h3("On-CPU")
	on := rows.OnCPUOf(ta, 0)
	switch {
	case len(on.Stacks) > 0:
		var stacks []FlameStack
		for _, st := range on.Stacks {
			root := Frame{Name: rows.OrDash(st.Comm), Kind: FrameRoot}
			stacks = append(stacks, FlameStack{Frames: stackFrames(root, st.User, st.UserNote, st.Kernel, st.KernelNote), Value: float64(st.Samples)})
		}
		hz := on.Hz
		sub := fmt.Sprintf("%s samples", units.FormatCount(on.Samples))
		format := func(v float64) string { return units.FormatCount(int64(v)) + " samples" }
		if hz > 0 {
			rate := on.Rate
			if ta.OnCPUSource != model.OnCPUTick {
				rate += " on every CPU"
			}
			sub += fmt.Sprintf(" %s, about %s of CPU", rate, durSec(on.CPUSec))
			format = func(v float64) string {
				return fmt.Sprintf("%s samples, ~%s", units.FormatCount(int64(v)), durSec(v/float64(hz)))
			}
		}
		s.figs(figure{Caption: "On-CPU flame graph", Sub: sub, Wide: true,
			Chart: FlameGraph("flame-oncpu", stacks, FlameOptions{Title: "on-CPU stacks", Format: format})})
	case on.Note != "":
		s.why("no on-CPU samples: " + on.Note)
	default:
		s.why("no on-CPU samples: observe with --stacks to sample the running threads' stacks")
	}

	s.h3("Off-CPU")
	off := rows.OffCPUOf(ta)
	if !off.Taken {
		s.why("no off-CPU stacks: observe with --stacks to take the stack of every sleep")
		return s
	}
	if len(off.Stacks) == 0 {
		s.why("no sleeps of busy threads seen")
	}
	var figs []figure
	for _, g := range off.Groups {
		var stacks []FlameStack
		for _, st := range g.Stacks {
			root := Frame{Name: st.Comm, Kind: FrameRoot}
			stacks = append(stacks, FlameStack{Frames: stackFrames(root, st.User, st.UserNote, st.Kernel, st.KernelNote), Value: st.Seconds})
		}
		figs = append(figs, figure{Caption: "Off-CPU: " + g.Category,
			Sub:  fmt.Sprintf("%s in %s sleeps", durSec(g.Seconds), units.FormatCount(g.Count)),
			Wide: true,
			Chart: FlameGraph(chartName("flame-offcpu", g.Category), stacks, FlameOptions{Title: "off-CPU stacks: " + g.Category,
				Format: durSec, OffCPU: true})})
	}
	s.figs(figs...)
	if off.IdleSec > 0 {
		s.p(fmt.Sprintf("idle threads' stacks (%s of sleep) are left out", durSec(off.IdleSec)))
	}
	return s
}

// stackFrames joins a thread's stacks root first: the root, the user stack
// reversed (the record has the innermost frame first), then the kernel
// stack reversed. A missing or cut stack becomes a note frame, so the gap
// shows where it is.
func stackFrames(root Frame, user []string, userNote string, kernel []string, kernelNote string) []Frame {
	out := []Frame{root}
	switch {
	case len(user) == 0 && userNote != "":
		out = append(out, Frame{Name: "[no user stack]", Kind: FrameNote, Note: userNote})
	case userNote != "":
		// The walk stopped short: the outer frames are missing.
		out = append(out, Frame{Name: "[cut short]", Kind: FrameNote, Note: userNote})
	}
	for i := len(user) - 1; i >= 0; i-- {
		out = append(out, Frame{Name: user[i], Kind: FrameUser})
	}
	switch {
	case len(kernel) == 0 && kernelNote != "":
		out = append(out, Frame{Name: "[no kernel stack]", Kind: FrameNote, Note: kernelNote})
	case kernelNote != "":
		out = append(out, Frame{Name: "[cut short]", Kind: FrameNote, Note: kernelNote})
	}
	for i := len(kernel) - 1; i >= 0; i-- {
		out = append(out, Frame{Name: kernel[i], Kind: FrameKernel})
	}
	return out
}
