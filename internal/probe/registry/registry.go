// Package registry lists perfsleuth's probes, in the order they start: a
// probe comes after the probes it needs (probe.Info.Needs). Adding a probe
// is its own folder under internal/probe and one line here.
package registry

import (
	"github.com/perfsleuth/perfsleuth/internal/probe"
	"github.com/perfsleuth/perfsleuth/internal/probe/procfs"
	"github.com/perfsleuth/perfsleuth/internal/probe/profile"
	"github.com/perfsleuth/perfsleuth/internal/probe/sqlprobe"
	"github.com/perfsleuth/perfsleuth/internal/probe/storage"
	"github.com/perfsleuth/perfsleuth/internal/probe/timeacct"
)

var constructors = []func() probe.Probe{
	timeacct.New,
	storage.New,
	sqlprobe.New,
	profile.New,
	procfs.New,
}

// New returns a fresh instance of every probe, for one run.
func New() []probe.Probe {
	out := make([]probe.Probe, len(constructors))
	for i, c := range constructors {
		out[i] = c()
	}
	return out
}
