package target

import (
	"context"
	"fmt"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// NewGroup returns main observed together with running processes (and
// their descendants) as one workload: a client command with the server it
// talks to (observe -p PID -- CMD), or several running processes (observe
// -p A -p B). main's end is the run's end; the running processes are never
// signalled.
func NewGroup(main Target, with []int) Target {
	g := &group{main: main}
	for _, pid := range with {
		g.with = append(g.with, &running{pid: pid})
	}
	return g
}

type group struct {
	main Target
	with []*running
}

// Start checks that every running process is there, then starts main.
func (g *group) Start(ctx context.Context) error {
	seen := map[int]bool{}
	for _, p := range g.main.Pids() {
		seen[p] = true
	}
	for _, r := range g.with {
		if seen[r.pid] {
			return fmt.Errorf("pid %d is given twice: give each process once", r.pid)
		}
		seen[r.pid] = true
		if err := r.Start(ctx); err != nil {
			return err
		}
	}
	return g.main.Start(ctx)
}

// Model is main's, with the running processes in With.
func (g *group) Model() model.Target {
	m := g.main.Model()
	for _, r := range g.with {
		if r.t.PID != nil {
			m.With = append(m.With, *r.t.PID)
		}
	}
	return m
}

func (g *group) Dir() string { return g.main.Dir() }

// Pids are main's roots and the running processes.
func (g *group) Pids() []int {
	pids := append([]int(nil), g.main.Pids()...)
	for _, r := range g.with {
		pids = append(pids, r.pid)
	}
	return pids
}

// Wait is main's; a running process that exited meanwhile is said.
func (g *group) Wait(ctx context.Context) (Outcome, error) {
	out, err := g.main.Wait(ctx)
	for _, r := range g.with {
		if r.gone == nil {
			continue
		}
		select {
		case <-r.gone:
			out.Warnings = append(out.Warnings, fmt.Sprintf("pid %d (%s), observed with the workload, exited during the run", r.pid, r.t.PID.Comm))
		default:
		}
	}
	return out, err
}

// Stop stops main and the watches on the running processes, which are
// left alone.
func (g *group) Stop() {
	g.main.Stop()
	for _, r := range g.with {
		r.Stop()
	}
}
