// Package probetest has a fake probe that records what the runner asks of
// it, so that the runner and the experiments can be tested without root or
// eBPF.
package probetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/probe"
	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
)

// Log collects the calls of several fakes in the order they happened.
type Log struct {
	mu    sync.Mutex
	calls []string
}

// Add records one call.
func (l *Log) Add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, fmt.Sprintf(format, args...))
}

// Calls returns the calls so far.
func (l *Log) Calls() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls...)
}

// Fake is a probe that logs every call. It contributes a warning naming
// itself, so a test can see that it did.
type Fake struct {
	Name     string
	Needs    []string
	Required bool
	// Unwanted makes Wanted false; StartErr and StopErr make those fail.
	Unwanted          bool
	StartErr, StopErr error
	Log               *Log

	// CalibrateFor makes Calibrate take that long; Calibrated is set
	// when it has returned (not in Log: it runs beside the target's
	// start, in no fixed order with it).
	CalibrateFor time.Duration
	Calibrated   atomic.Bool

	started bool
	// Roots are the pids it was started on.
	Roots []int
}

var _ probe.Probe = (*Fake)(nil)

func (f *Fake) Info() probe.Info {
	return probe.Info{Name: f.Name, Needs: f.Needs, Required: f.Required}
}

func (f *Fake) Wanted(probe.Options) bool { return !f.Unwanted }

func (f *Fake) Calibrate(probe.Options) {
	time.Sleep(f.CalibrateFor)
	f.Calibrated.Store(true)
}

func (f *Fake) Start(ctx context.Context, s *probe.Session) error {
	f.Log.Add("start %s", f.Name)
	if f.StartErr != nil {
		return f.StartErr
	}
	f.started, f.Roots = true, s.Roots
	return nil
}

func (f *Fake) Stop() error {
	f.Log.Add("stop %s", f.Name)
	if !f.started {
		return errors.New("stopped without a start")
	}
	return f.StopErr
}

func (f *Fake) Contribute(run *model.Run) {
	f.Log.Add("contribute %s", f.Name)
	if f.started {
		run.Warnings = append(run.Warnings, "fake probe "+f.Name+" was here")
	}
}

func (f *Fake) Check() sysinfo.Check {
	return sysinfo.Check{Name: f.Name, Status: sysinfo.StatusOK, Detail: "a fake probe"}
}
