//go:build !amd64

package storage

import (
	"errors"
	"github.com/perfsleuth/perfsleuth/internal/probe"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// Probe is not available on this architecture: the BPF program reads x86-64
// syscall registers and numbers.
type Probe struct{}

// Start fails: the probe has only been built for amd64.
func Start(cfg Config, shared probe.Shared) (*Probe, error) {
	return nil, errors.New("storage: not supported on this architecture yet")
}

// Stop does nothing.
func (p *Probe) Stop() (*model.StorageIO, error) {
	return nil, errors.New("storage: not supported on this architecture yet")
}

// Calibrate fails: the probe has only been built for amd64.
func Calibrate(files bool, dir string) (*Costs, error) {
	return nil, errors.New("storage: not supported on this architecture yet")
}

// programObject: no object on this architecture.
var programObject []byte
