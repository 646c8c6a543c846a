//go:build !amd64

package sqlprobe

import (
	"errors"
	"github.com/perfsleuth/perfsleuth/internal/probe"

	"github.com/cilium/ebpf"
)

// Probe is not available on this architecture: the BPF object is built
// for amd64 only.
type Probe struct{}

// Start fails: the probe has only been built for amd64.
func Start(pids []int, shared probe.Shared, threads *ebpf.Map) (*Probe, error) {
	return nil, errors.New("sql: not supported on this architecture yet")
}

// Stop does nothing.
func (p *Probe) Stop() (*Result, error) {
	return nil, errors.New("sql: not supported on this architecture yet")
}
