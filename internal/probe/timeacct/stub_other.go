//go:build !amd64

package timeacct

import "errors"

// Probe is not available on this architecture: the BPF program reads x86-64
// syscall registers and numbers.
type Probe struct{}

// Start fails: the probe has only been built for amd64.
func Start(cfg Config) (*Probe, error) {
	return nil, errors.New("timeacct: not supported on this architecture yet")
}

// Stop does nothing.
func (p *Probe) Stop() (*Result, error) {
	return nil, errors.New("timeacct: not supported on this architecture yet")
}

// CloseWindow does nothing.
func (p *Probe) CloseWindow() {}

// Calibrate fails: the probe has only been built for amd64.
func Calibrate(cfg Config, dir string) (*Costs, error) {
	return nil, errors.New("timeacct: not supported on this architecture yet")
}

// programObject: no object on this architecture.
var programObject []byte
