// Package rows computes what the run and comparison views show, table by
// table: the rows, the sums, the orders and the sentences, as plain data.
// The terminal renderer (report) and the HTML page (htmlreport) lay the
// same rows out, so a number cannot differ between them because one of them
// computed it another way.
//
// Builders never cut a string to a width (a layout decision), take their
// top-N limits as parameters (each view shows as many rows as it has room
// for), and leave durations in table cells as float seconds: the terminal
// prints "850ms", the page three significant digits. A sentence both views
// write takes the view's duration format in Units.
package rows

import (
	"fmt"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// Units are how a view prints what rows puts in its sentences.
type Units struct {
	// Dur prints seconds.
	Dur func(sec float64) string
}

// List is the first rows of a table and how many rows it has in all, so a
// view can say how many more the run record holds.
type List[T any] struct {
	Rows  []T
	Total int
}

// More is how many rows the list left out.
func (l List[T]) More() int { return l.Total - len(l.Rows) }

// first keeps at most n of rows.
func first[T any](rows []T, n int) List[T] {
	return List[T]{Rows: rows[:min(n, len(rows))], Total: len(rows)}
}

// Secs prints seconds the short way: "850ms", "12.3s".
func Secs(s float64) string {
	return units.FormatDuration(time.Duration(s * float64(time.Second)))
}

// Rate prints a throughput: whole numbers from 100 up, one decimal below.
func Rate(v float64) string {
	if v >= 100 {
		return units.FormatCount(int64(v + 0.5))
	}
	return fmt.Sprintf("%.1f", v)
}

// Pct prints a relative change as a signed whole percentage.
func Pct(x float64) string { return units.FormatChange(x) }

// Noise prints a relative noise, 0.04 as "±4%".
func Noise(x float64) string { return fmt.Sprintf("±%.0f%%", x*100) }

// OrDash stands in "-" for an empty string.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// BetterWords says which way a measure improves.
func BetterWords(m model.Measure) string {
	if m.HigherIsBetter {
		return "higher is better"
	}
	return "lower is better"
}

// PerUnit writes a time per unit of work (diagnose --scale).
func PerUnit(s float64) string { return units.FormatNs(s * 1e9) }
