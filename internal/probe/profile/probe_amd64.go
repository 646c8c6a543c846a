//go:build amd64

package profile

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/probe"
)

// Probe is an attached sampler. Stop it to read the result.
type Probe struct {
	cfg  Config
	objs profileObjects
	// coll is what the objects were assigned from, to Release.
	coll  *ebpf.Collection
	clock *probe.CPUClock
}

// Start loads the sampler and attaches it to a cpu-clock event on every
// online CPU; it samples the processes in tracked, the timeacct probe's map.
func Start(cfg Config, tracked *ebpf.Map) (_ *Probe, err error) {
	if tracked == nil {
		return nil, errors.New("profile: needs the time-accounting probe's tracked map")
	}
	if cfg.Hz <= 0 {
		cfg.Hz = DefaultHz
	}
	p := &Probe{cfg: cfg}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	spec, err := loadProfile()
	if err != nil {
		return nil, fmt.Errorf("load profile spec: %w", err)
	}
	coll, err := probe.NewCollection("profile", spec, ebpf.CollectionOptions{
		MapReplacements: map[string]*ebpf.Map{"tracked": tracked},
	})
	if err != nil {
		return nil, err
	}
	defer coll.Close() // what Assign took stays open in p.objs
	p.coll = coll
	if err := coll.Assign(&p.objs); err != nil {
		return nil, fmt.Errorf("load profile: %w", err)
	}
	if p.clock, err = probe.AttachCPUClock("profile", p.objs.DoSample, cfg.Hz); err != nil {
		return nil, err
	}
	return p, nil
}

// close detaches the program and closes the events and maps. Safe to call twice.
func (p *Probe) close() {
	p.clock.Close()
	p.clock = nil
	p.objs.Close()
	probe.Release(p.coll)
}

// Stop detaches the sampler and returns what it counted, most samples first.
func (p *Probe) Stop() (*Result, error) {
	p.clock.Detach()
	defer p.close()
	res := &Result{Hz: p.cfg.Hz}
	var errs []error
	var per []profilePrCounters
	if err := p.objs.Counters.Lookup(uint32(0), &per); err != nil {
		errs = append(errs, fmt.Errorf("map counters: %w", err))
	}
	for _, c := range per {
		res.Samples += c.Samples
		res.Dropped += c.Dropped
		res.Runs += c.Runs
		res.FilterNs += c.FilterNs
		res.WorkNs += c.WorkNs
	}
	lookup := probe.StackLookup(p.objs.Stacks)
	var key profilePrKey
	var val profilePrVal
	it := p.objs.Counts.Iterate()
	for it.Next(&key, &val) {
		s := Stack{PID: int(key.Tgid), TID: int(key.Tid), Comm: comm(val.Comm), Samples: val.Samples}
		// A sample taken in user mode has no kernel stack: nothing to say.
		if -key.Kstack != int32(unix.EFAULT) {
			s.Kernel, s.KernelErr = lookup(key.Kstack)
		}
		s.User, s.UserErr = lookup(key.Ustack)
		res.Stacks = append(res.Stacks, s)
	}
	if err := it.Err(); err != nil {
		errs = append(errs, fmt.Errorf("map counts: %w", err))
	}
	slices.SortFunc(res.Stacks, func(a, b Stack) int {
		return cmp.Or(cmp.Compare(b.Samples, a.Samples), cmp.Compare(a.TID, b.TID))
	})
	return res, errors.Join(errs...)
}

func comm(c [16]int8) string {
	b := make([]byte, 0, len(c))
	for _, ch := range c {
		if ch == 0 {
			break
		}
		b = append(b, byte(ch))
	}
	return string(b)
}

// tryStart starts and stops the sampler with a tracked map of its own.
func tryStart() error {
	spec, err := loadProfile()
	if err != nil {
		return err
	}
	tracked, err := ebpf.NewMap(spec.Maps["tracked"])
	if err != nil {
		return err
	}
	defer tracked.Close()
	p, err := Start(Config{}, tracked)
	if err != nil {
		return err
	}
	_, err = p.Stop()
	return err
}
