// Package null is the null benchmark: a workload that does no IO and no
// real work, only empty operations and a sleep, so that the runner, the
// targets and the experiments can be tested without a device or root, as
// fio's null ioengine tests fio. It can also be told to fail.
package null

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/workload"
)

// Validate checks the settings.
func Validate(c *model.NullConfig) error {
	switch {
	case c.Ops < 0 || c.DurationSec < 0 || c.PrepareSec < 0:
		return errors.New("null: ops, duration and prepare time must not be negative")
	case c.Fail != "" && c.Fail != "prepare" && c.Fail != "run":
		return fmt.Errorf("null: fail %q: use prepare or run", c.Fail)
	}
	return nil
}

// Null is one run of the null benchmark.
type Null struct {
	cfg     model.NullConfig
	cleaned int
}

// New returns the benchmark for validated settings.
func New(c model.NullConfig) *Null { return &Null{cfg: c} }

var _ workload.Workload = (*Null)(nil)

// Prepare sleeps PrepareSec (or until ctx ends).
func (n *Null) Prepare(ctx context.Context) error {
	if err := sleep(ctx, n.cfg.PrepareSec); err != nil {
		return err
	}
	if n.cfg.Fail == "prepare" {
		return errors.New("null: failing in prepare, as asked")
	}
	return nil
}

// Run does Ops empty operations, then sleeps up to DurationSec from its
// start. A cancelled ctx ends it early with what it did.
func (n *Null) Run(ctx context.Context, progress workload.Progress) (*model.Result, error) {
	if n.cfg.Fail == "run" {
		return nil, errors.New("null: failing in run, as asked")
	}
	start := time.Now()
	var ops int64
	for ops < n.cfg.Ops && ctx.Err() == nil {
		ops++
	}
	left := n.cfg.DurationSec - time.Since(start).Seconds()
	_ = sleep(ctx, left)
	if progress != nil {
		progress(1)
	}
	return &model.Result{DurationSec: time.Since(start).Seconds(), Null: &model.NullResult{Ops: ops}}, nil
}

// Cleanup has nothing to remove; it counts its calls for tests.
func (n *Null) Cleanup() error {
	n.cleaned++
	return nil
}

// Cleaned says how often Cleanup ran.
func (n *Null) Cleaned() int { return n.cleaned }

func sleep(ctx context.Context, sec float64) error {
	if sec <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(time.Duration(sec * float64(time.Second)))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
