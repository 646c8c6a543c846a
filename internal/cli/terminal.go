package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/perfsleuth/perfsleuth/internal/units"
)

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// useColor follows the NO_COLOR convention (no-color.org): any non-empty
// value turns colour off; colour is also off when w is not a terminal.
func useColor(w io.Writer) bool {
	return os.Getenv("NO_COLOR") == "" && isTerminal(w)
}

// progressDelay is how long a run goes before a progress bar appears: runs
// shorter than that finish before a bar would be of use (the issue asks for a
// bar on runs longer than 2 s).
const progressDelay = 2 * time.Second

// progressBar draws a one-line bar on a terminal's stderr, redrawn at most
// every 100 ms. It draws nothing when stderr is not a terminal.
type progressBar struct {
	mu      sync.Mutex
	w       io.Writer
	on      bool
	start   time.Time
	phase   string
	frac    float64
	last    time.Time
	drawn   bool
	phStart time.Time
	stop    chan struct{}
	// prefix is drawn before the phase (diagnose: the condition and run).
	prefix string
}

func newProgressBar(w io.Writer) *progressBar {
	now := time.Now()
	p := &progressBar{w: w, on: isTerminal(w), start: now, phStart: now, stop: make(chan struct{})}
	if p.on {
		// Redraw on a clock too, so that phases without progress reports
		// (prepare, cleanup) still show their elapsed time.
		go func() {
			t := time.NewTicker(250 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-p.stop:
					return
				case <-t.C:
					p.mu.Lock()
					p.draw(false)
					p.mu.Unlock()
				}
			}
		}()
	}
	return p
}

func (p *progressBar) Phase(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.phase, p.frac, p.phStart = name, 0, time.Now()
	p.draw(true)
}

func (p *progressBar) Progress(f float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.frac = f
	p.draw(false)
}

// SetPrefix sets what the bar shows before the phase.
func (p *progressBar) SetPrefix(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.prefix = s
}

// Hide removes the bar from the line until its next redraw, so that a
// message prints on a clean line.
func (p *progressBar) Hide() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.erase()
}

// erase blanks the bar's line; p.mu is held.
func (p *progressBar) erase() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}

// Clear removes the bar so that results print on a clean line. Safe on nil
// and more than once.
func (p *progressBar) Clear() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.erase()
	if p.on {
		close(p.stop)
	}
	p.on = false
}

func (p *progressBar) draw(force bool) {
	if !p.on || time.Since(p.start) < progressDelay {
		return
	}
	now := time.Now()
	if !force && now.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last = now
	const width = 30
	elapsed := now.Sub(p.phStart)
	line := p.prefix + fmt.Sprintf("%-8s", p.phase)
	if p.phase == "run" {
		f := min(max(p.frac, 0), 1)
		n := int(f * width)
		eta := ""
		if f > 0.01 {
			eta = " eta " + units.FormatDuration(time.Duration(float64(elapsed)*(1-f)/f))
		}
		line += fmt.Sprintf("[%s%s] %3.0f%% %s%s", strings.Repeat("=", n), strings.Repeat(" ", width-n), f*100, units.FormatDuration(elapsed), eta)
	} else {
		line += units.FormatDuration(elapsed)
	}
	fmt.Fprintf(p.w, "\r\033[K%s", line)
	p.drawn = true
}
