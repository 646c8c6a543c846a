// Package workload defines what perfsleuth can run and measure: a Workload
// prepares (unmeasured), runs (measured) and cleans up after itself. The
// implementations live in sub-packages, one per workload, the way fio keeps
// one file per ioengine.
package workload

import (
	"context"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// Progress reports how far the measured phase is, as a fraction in [0, 1].
// Implementations call it at most a few times per second; it may be nil.
type Progress func(fraction float64)

// Workload is one runnable benchmark.
type Workload interface {
	// Prepare lays out what the run needs (files, tables). It is not measured
	// and must leave nothing behind when it fails or ctx is cancelled.
	Prepare(ctx context.Context) error
	// Run performs the measured phase. When ctx is cancelled it stops promptly
	// and returns what was measured so far with a nil error; the caller knows
	// from ctx that the result is partial.
	Run(ctx context.Context, progress Progress) (*model.Result, error)
	// Cleanup removes everything the workload created, unless told to keep it.
	// It is safe to call more than once and after a failed Prepare.
	Cleanup() error
}
