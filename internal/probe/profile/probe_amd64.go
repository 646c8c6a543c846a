//go:build amd64

package profile

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/probe"
	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
)

// Probe is an attached sampler. Stop it to read the result.
type Probe struct {
	cfg   Config
	objs  profileObjects
	fds   []int
	links []link.Link
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
	if err := coll.Assign(&p.objs); err != nil {
		return nil, fmt.Errorf("load profile: %w", err)
	}
	online, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, fmt.Errorf("profile: online CPUs: %w", err)
	}
	for _, cpu := range sysinfo.ParseCPUList(strings.TrimSpace(string(online))) {
		attr := unix.PerfEventAttr{
			Type:   unix.PERF_TYPE_SOFTWARE,
			Config: unix.PERF_COUNT_SW_CPU_CLOCK,
			Sample: uint64(cfg.Hz),
			Bits:   unix.PerfBitFreq,
		}
		attr.Size = uint32(unsafe.Sizeof(attr))
		fd, err := unix.PerfEventOpen(&attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			return nil, fmt.Errorf("profile: open cpu-clock on CPU %d: %w", cpu, err)
		}
		p.fds = append(p.fds, fd)
		l, err := link.AttachRawLink(link.RawLinkOptions{Target: fd, Program: p.objs.DoSample, Attach: ebpf.AttachPerfEvent})
		if err != nil {
			return nil, fmt.Errorf("profile: attach to cpu-clock on CPU %d: %w", cpu, err)
		}
		p.links = append(p.links, l)
	}
	return p, nil
}

// close detaches the program and closes the events and maps. Safe to call twice.
func (p *Probe) close() {
	for _, l := range p.links {
		l.Close()
	}
	p.links = nil
	for _, fd := range p.fds {
		unix.Close(fd)
	}
	p.fds = nil
	p.objs.Close()
}

// Stop detaches the sampler and returns what it counted, most samples first.
func (p *Probe) Stop() (*Result, error) {
	for _, l := range p.links {
		l.Close()
	}
	p.links = nil
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
