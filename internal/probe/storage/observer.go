package storage

import (
	"context"
	"fmt"
	"os"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/probe"
	"github.com/perfsleuth/perfsleuth/internal/sqlitetrace"
	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
)

// New returns the storage probe as a probe.Probe: block devices and the
// workload's page cache on every eBPF run, and with --storage its files
// and SQLite's pages. It follows the processes the time accounting tracks.
func New() probe.Probe { return &observer{} }

type observer struct {
	p      *Probe
	sqlite *sqlitetrace.Tracer
	st     *model.StorageIO
	err    error
}

func (o *observer) Info() probe.Info {
	return probe.Info{Name: "storage", Needs: []string{"timeacct"}}
}

func (o *observer) Wanted(opts probe.Options) bool { return !opts.NoEBPF }

func (o *observer) Calibrate(opts probe.Options) {
	if os.Geteuid() == 0 {
		calibrated(opts.Storage)
	}
}

func (o *observer) Start(_ context.Context, s *probe.Session) error {
	cfg := Config{Files: s.Storage}
	cfg.Costs, cfg.CostsNote = calibrated(s.Storage)
	if s.Storage {
		o.sqlite = sqlitetrace.New()
		cfg.OnEvent = o.sqlite.Add
	}
	p, err := Start(cfg, s.Shared())
	if err != nil {
		if o.sqlite != nil {
			o.sqlite.Close()
			o.sqlite = nil
		}
		return fmt.Errorf("the storage probe is off (%v): no block-device, page-cache or file view from eBPF", err)
	}
	o.p = p
	s.Share(SharedSQLThreads, p.SQLThreads())
	return nil
}

// SharedSQLThreads names the map of each thread's current SQLite statement
// (Probe.SQLThreads) among the session's shared maps.
const SharedSQLThreads = "sql_threads"

func (o *observer) Stop() error {
	if o.p == nil {
		return nil
	}
	o.st, o.err = o.p.Stop()
	o.p = nil
	// The tracer reads the SQLite files it saw (page types, owners) while
	// they are surely still there, and lets them go.
	if o.sqlite != nil {
		if o.st != nil {
			o.st.SQLite = o.sqlite.Finish(o.st.Files)
		} else {
			o.sqlite.Close()
		}
		o.sqlite = nil
	}
	return o.err
}

func (o *observer) Contribute(run *model.Run) {
	if o.err != nil {
		run.Warnings = append(run.Warnings, "the storage probe failed: "+o.err.Error())
	}
	st := o.st
	if st == nil {
		return
	}
	run.Storage = st
	probe.AddCost(run, st.ProbeCPUSec, st.ProbeRuns, st.Programs...)
}

// Check says whether the storage probe loads here, by loading it with
// nothing to follow (as Calibrate does).
func (o *observer) Check() sysinfo.Check {
	c := sysinfo.Check{Name: "storage_probe"}
	if os.Geteuid() != 0 {
		c.Status, c.Detail = sysinfo.StatusMissing, "not root: no block-device, page-cache or per-file view from eBPF (observe shows /proc's iostat figures)"
		c.Fix = "run perfsleuth as root (sudo)"
		return c
	}
	if _, note := calibrated(true); note != "" {
		c.Status, c.Detail = sysinfo.StatusMissing, "the storage probe does not load here: "+note
		c.Fix = "see the tracepoint checks above"
		return c
	}
	c.Status, c.Detail = sysinfo.StatusOK, "the storage probe loads: block devices and page cache on every run, files and SQLite pages with --storage"
	return c
}

// calibrations are the probe's costs per Files setting.
var calibrations = probe.Calibrations[bool, *Costs]{Name: "storage", Object: programObject}

// calibrated returns the probe's costs for files, measured once per
// process (or read from the cache of an earlier one, probe.Calibrations),
// or nil and why they could not be (the probe's estimate then
// says so).
func calibrated(files bool) (*Costs, string) {
	return calibrations.Get(files, func() (*Costs, error) { return Calibrate(files, ".") })
}
