package htmlreport

import (
	"fmt"
	"hash/fnv"
	"html/template"
	"sort"
	"strconv"
)

// FrameKind tells what a flame-graph frame is, which sets its colour.
type FrameKind int

// Frame kinds.
const (
	FrameUser FrameKind = iota
	FrameKernel
	// FrameRoot is a thread or process name at the bottom of its stacks.
	FrameRoot
	// FrameNote stands for a missing or cut stack; its Note says why.
	FrameNote
)

// Frame is one function of a stack.
type Frame struct {
	Name string
	Kind FrameKind
	Note string
}

// FlameStack is one stack, root first, and its weight (samples, seconds).
type FlameStack struct {
	Frames []Frame
	Value  float64
}

// FlameOptions shape a flame graph.
type FlameOptions struct {
	Title string
	// Format prints a weight for the tooltips ("12 samples", "3.1ms").
	Format func(float64) string
	// OffCPU picks the cold (blue) palette of off-CPU time instead of the
	// hot one of on-CPU samples.
	OffCPU bool
	// Width defaults to 1160.
	Width float64
}

// Flame-graph geometry: frames narrower than minFrameFrac of the whole are
// left out (they would be under a pixel), and at most maxFlameDepth levels
// are drawn.
const (
	frameH        = 17.0
	minFrameFrac  = 0.0005
	maxFlameDepth = 120
)

type flameNode struct {
	frame    Frame
	value    float64
	children map[Frame]*flameNode
}

func (n *flameNode) child(f Frame) *flameNode {
	key := Frame{Name: f.Name, Kind: f.Kind}
	c := n.children[key]
	if c == nil {
		c = &flameNode{frame: f, children: map[Frame]*flameNode{}}
		n.children[key] = c
	}
	return c
}

// FlameGraph draws stacks as an icicle graph: the root ("all") on top,
// callees below their callers, each frame as wide as its share of the
// weight, siblings in name order as flamegraph.pl sorts them. A click on a
// frame zooms into it (the page's small script; without it the graph is
// still complete, with tooltips).
func FlameGraph(name string, stacks []FlameStack, o FlameOptions) template.HTML {
	w := o.Width
	if w == 0 {
		w = 1160
	}
	format := o.Format
	if format == nil {
		format = func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
	}
	root := &flameNode{frame: Frame{Name: "all", Kind: FrameRoot}, children: map[Frame]*flameNode{}}
	for _, st := range stacks {
		if st.Value <= 0 {
			continue
		}
		root.value += st.Value
		n := root
		for _, f := range st.Frames {
			n = n.child(f)
			n.value += st.Value
		}
	}
	total := root.value
	depth := 0
	var measure func(n *flameNode, d int)
	measure = func(n *flameNode, d int) {
		if total <= 0 || n.value/total < minFrameFrac || d >= maxFlameDepth {
			return
		}
		depth = max(depth, d+1)
		for _, c := range n.children {
			measure(c, d+1)
		}
	}
	measure(root, 0)
	h := float64(max(depth, 1))*frameH + 2
	s := newSVG(name, w, h, o.Title)
	s.raw(`<g class="flame">` + "\n")
	var draw func(n *flameNode, x float64, d int)
	draw = func(n *flameNode, x float64, d int) {
		frac := n.value / total
		if frac < minFrameFrac || d >= maxFlameDepth {
			return
		}
		px, pw := x*w, frac*w
		tip := fmt.Sprintf("%s — %s, %.2f%%", n.frame.Name, format(n.value), frac*100)
		if n.frame.Note != "" {
			tip += "\n" + n.frame.Note
		}
		fill := frameColor(n.frame, o.OffCPU)
		fmt.Fprintf(&s.b, `<g class="f" data-x="%s" data-w="%s" data-n="%s">`, strconv.FormatFloat(x, 'f', 6, 64),
			strconv.FormatFloat(frac, 'f', 6, 64), esc(n.frame.Name))
		fmt.Fprintf(&s.b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s" rx="1.5">%s</rect>`,
			num(px), num(float64(d)*frameH), num(max(pw-0.6, 0.4)), num(frameH-1), esc(fill), tipTag(tip))
		label := fitText(n.frame.Name, pw-6, charWidth)
		fmt.Fprintf(&s.b, `<text x="%s" y="%s" font-size="%s" fill="%s">%s</text></g>`+"\n",
			num(px+3), num(float64(d)*frameH+12), num(fontSize), esc(textOn(fill)), esc(label))
		kids := make([]*flameNode, 0, len(n.children))
		for _, c := range n.children {
			kids = append(kids, c)
		}
		sort.Slice(kids, func(i, j int) bool {
			if kids[i].frame.Name != kids[j].frame.Name {
				return kids[i].frame.Name < kids[j].frame.Name
			}
			return kids[i].frame.Kind < kids[j].frame.Kind
		})
		cx := x
		for _, c := range kids {
			draw(c, cx, d+1)
			cx += c.value / total
		}
	}
	if total > 0 {
		draw(root, 0, 0)
	} else {
		s.text(w/2, h/2+4, "middle", fontSize, colorMuted, "no stacks")
	}
	s.raw("</g>\n")
	return s.done()
}

// frameColor varies a palette by a hash of the name, so a function has the
// same colour everywhere: on-CPU user code red to orange, kernel code
// yellow-orange; off-CPU user code light blue, kernel code deeper blue.
func frameColor(f Frame, offCPU bool) string {
	switch f.Kind {
	case FrameRoot:
		return "#c9ccd2"
	case FrameNote:
		return "#ecedef"
	}
	h := fnv.New32a()
	h.Write([]byte(f.Name))
	v := h.Sum32()
	a, b := float64(v&0xff)/255, float64((v>>8)&0xff)/255
	var r, g, bl float64
	switch {
	case !offCPU && f.Kind == FrameUser:
		r, g, bl = 215+35*a, 70+90*b, 50+25*a
	case !offCPU:
		r, g, bl = 230+20*b, 165+45*a, 60+30*b
	case f.Kind == FrameUser:
		r, g, bl = 120+40*a, 165+35*b, 225+25*a
	default:
		r, g, bl = 55+35*a, 100+40*b, 190+40*a
	}
	return fmt.Sprintf("#%02x%02x%02x", int(r), int(g), int(bl))
}
