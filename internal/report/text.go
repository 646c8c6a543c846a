// Package report renders a model.Run for people (terminal) and programs
// (JSON). Renderers take plain data and return bytes: they never touch the
// kernel, so a record saved on one machine renders the same on another.
// What the tables hold comes from package rows, which the HTML page
// (htmlreport) lays out too; this package decides only how it fits in
// Width columns.
package report

import (
	"bytes"
	"fmt"
	"strings"
	"unicode"
)

// Width is the terminal width every line of the text view fits in.
const Width = 80

// Options control rendering.
type Options struct {
	// Color adds ANSI colour (the CLI turns it off for NO_COLOR and pipes).
	Color bool
}

// doc accumulates the text view.
type doc struct {
	b     bytes.Buffer
	color bool
}

const (
	ansiBold   = "\033[1m"
	ansiYellow = "\033[33m"
	ansiRed    = "\033[31m"
	ansiDim    = "\033[2m"
	ansiReset  = "\033[0m"
)

func (d *doc) paint(code, s string) string {
	if !d.color || s == "" {
		return s
	}
	return code + s + ansiReset
}

func (d *doc) line(format string, args ...any) {
	fmt.Fprintf(&d.b, format, args...)
	d.b.WriteByte('\n')
}

func (d *doc) blank() { d.b.WriteByte('\n') }

func (d *doc) heading(s string) {
	d.blank()
	d.line("%s", d.paint(ansiBold, s))
}

// field prints "label    text", wrapping text at Width under itself.
func (d *doc) field(label, text string) {
	w := max(10, len(label)+1)
	d.wrapped(fmt.Sprintf("%-*s", w, label), strings.Repeat(" ", w), text)
}

// wrapped prints text after first, continuing on lines that start with indent.
func (d *doc) wrapped(first, indent, text string) {
	prefix := first
	cur := prefix
	width := len([]rune(prefix))
	words := strings.Fields(printable(text))
	if len(words) == 0 {
		d.line("%s", strings.TrimRight(prefix, " "))
		return
	}
	// A word longer than a whole line (a long path) is cut into line-sized
	// pieces, so that no line is wider than Width.
	room := max(Width-len([]rune(indent)), 20)
	var pieces []string
	for _, w := range words {
		r := []rune(w)
		for len(r) > room {
			pieces = append(pieces, string(r[:room]))
			r = r[room:]
		}
		pieces = append(pieces, string(r))
	}
	words = pieces
	for i, w := range words {
		wl := len([]rune(w))
		if i > 0 && width+1+wl > Width {
			d.line("%s", cur)
			cur, width = indent+w, len([]rune(indent))+wl
			continue
		}
		if i > 0 {
			cur += " "
			width++
		}
		cur += w
		width += wl
	}
	d.line("%s", cur)
}

// printable makes text that comes from the workload or the host (thread
// names, paths, command lines) safe for a terminal: control characters,
// escape sequences included, are shown as \xNN instead of being sent.
func printable(s string) string {
	if strings.IndexFunc(s, unicode.IsControl) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			fmt.Fprintf(&b, "\\x%02x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// fit cuts s to n runes, marking the cut with "~".
func fit(s string, n int) string {
	r := []rune(printable(s))
	if len(r) <= n {
		return s
	}
	if n <= 1 {
		return string(r[:n])
	}
	return string(r[:n-1]) + "~"
}
