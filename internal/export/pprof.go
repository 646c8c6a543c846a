package export

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// Sample types of the pprof profile (profile.proto's sample_type), each
// named as `go tool pprof -sample_index=NAME` selects it. A profile holds
// only the kinds of stacks the record has; an on-CPU sample is 0 in the
// off-CPU types and the other way round.
const (
	ptSamples = "samples" // on-CPU samples, count
	ptCPU     = "cpu"     // on-CPU time, nanoseconds (samples × period)
	ptSleeps  = "sleeps"  // times a thread went off CPU with the stack, count
	ptOffCPU  = "offcpu"  // off-CPU time, nanoseconds
)

// Pprof writes the on-CPU and off-CPU stacks as a gzipped pprof profile:
// one location per distinct frame, one function per symbol and file, one
// mapping per file (the kernel as [kernel.kallsyms]), and on every sample
// the labels process, thread and category (cpu for on-CPU) and the
// numeric labels pid and tid.
func Pprof(run *model.Run) ([]byte, error) {
	onErr, offErr := onCPUPresent(run), offCPUPresent(run)
	ta := run.TimeAccounting
	if onErr != nil && offErr != nil {
		var note string
		if ta != nil {
			note = ta.OnCPUNote
		}
		return nil, needStacks(run, "on- or off-CPU", 0, note)
	}
	pb := &pprofBuilder{
		p: &profile.Profile{
			TimeNanos:     run.StartedAt.UnixNano(),
			DurationNanos: int64(math.Round(ta.WindowSec * 1e9)),
			Comments:      pprofComments(run),
		},
		names:     newNames(run),
		functions: map[[2]string]*profile.Function{},
		locations: map[[2]string]*profile.Location{},
		mappings:  map[string]*profile.Mapping{},
	}
	p := pb.p
	pb.mainMapping(ta)
	// on and off index the first of each kind's two sample types, -1 when
	// the record has no stacks of that kind.
	on, off := -1, -1
	if onErr == nil {
		on = len(p.SampleType)
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: ptSamples, Unit: "count"}, &profile.ValueType{Type: ptCPU, Unit: "nanoseconds"})
		p.DefaultSampleType = ptCPU
		if ta.OnCPUHz > 0 {
			p.PeriodType = &profile.ValueType{Type: ptCPU, Unit: "nanoseconds"}
			p.Period = int64(math.Round(1e9 / float64(ta.OnCPUHz)))
		}
	}
	if offErr == nil {
		off = len(p.SampleType)
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: ptSleeps, Unit: "count"}, &profile.ValueType{Type: ptOffCPU, Unit: "nanoseconds"})
		if p.DefaultSampleType == "" {
			p.DefaultSampleType = ptOffCPU
		}
	}
	if on >= 0 {
		for _, s := range ta.OnCPU {
			v := make([]int64, len(p.SampleType))
			v[on] = s.Samples
			// The cpu-clock event fires every period of CPU time, so each
			// sample stands for one period, as pprof assumes; Seconds is
			// the fallback for a record without the frequency.
			if p.Period > 0 {
				v[on+1] = s.Samples * p.Period
			} else {
				v[on+1] = int64(math.Round(s.Seconds * 1e9))
			}
			pb.sample(v, s.PID, s.TID, model.CatCPU, s.User, s.Kernel)
		}
	}
	if off >= 0 {
		for _, s := range ta.OffCPU {
			v := make([]int64, len(p.SampleType))
			v[off] = s.Count
			v[off+1] = int64(math.Round(s.Seconds * 1e9))
			pb.sample(v, s.PID, s.TID, s.Category, s.User, s.Kernel)
		}
	}
	var sum int64
	for _, s := range p.Sample {
		for _, v := range s.Value {
			sum += max(v, 0)
		}
	}
	if sum == 0 {
		return nil, errors.New("the record's stacks hold no sample and no off-CPU time")
	}
	if err := p.CheckValid(); err != nil {
		return nil, fmt.Errorf("pprof profile: %w", err)
	}
	var b bytes.Buffer
	// Write gzips, as pprof expects.
	if err := p.Write(&b); err != nil {
		return nil, fmt.Errorf("pprof profile: %w", err)
	}
	return b.Bytes(), nil
}

// pprofComments say where the profile came from; `go tool pprof -comments` prints them.
func pprofComments(run *model.Run) []string {
	c := []string{"perfsleuth " + run.Tool.Version + " " + strings.Join(run.Tool.Args, " ")}
	if ta := run.TimeAccounting; ta != nil {
		if ta.OnCPUHz > 0 {
			c = append(c, fmt.Sprintf("on-CPU: cpu-clock sampled at %d Hz on every CPU", ta.OnCPUHz))
		}
		if len(ta.OffCPU) > 0 {
			c = append(c, "off-CPU: time slept per thread, category and stack; idle threads left out")
		}
		if ta.Dropped > 0 {
			c = append(c, fmt.Sprintf("the probe dropped %d events: the profile is not exact", ta.Dropped))
		}
	}
	return c
}

type pprofBuilder struct {
	p     *profile.Profile
	names names
	// Keyed by (symbol, file), (kernel or user, frame text) and file.
	functions map[[2]string]*profile.Function
	locations map[[2]string]*profile.Location
	mappings  map[string]*profile.Mapping
}

// sample adds one stack with its values; pprof wants the leaf first, which
// is the record's order, and the kernel frames above the user ones.
func (pb *pprofBuilder) sample(v []int64, pid, tid int, category string, user, kernel []string) {
	s := &profile.Sample{
		Value: v,
		Label: map[string][]string{
			"process":  {pb.names.Process(pid)},
			"thread":   {pb.names.Thread(pid, tid)},
			"category": {category},
		},
		NumLabel: map[string][]int64{"pid": {int64(pid)}, "tid": {int64(tid)}},
	}
	for _, f := range kernel {
		s.Location = append(s.Location, pb.location(f, true))
	}
	for _, f := range user {
		s.Location = append(s.Location, pb.location(f, false))
	}
	if len(s.Location) == 0 {
		s.Location = append(s.Location, pb.location(noStackFrame, false))
	}
	pb.p.Sample = append(pb.p.Sample, s)
}

func (pb *pprofBuilder) location(text string, kernel bool) *profile.Location {
	key := [2]string{"u", text}
	if kernel {
		key[0] = "k"
	}
	if l, ok := pb.locations[key]; ok {
		return l
	}
	f := parseFrame(text, kernel)
	l := &profile.Location{ID: uint64(len(pb.p.Location) + 1), Mapping: pb.mapping(f.File)}
	if !f.Resolved {
		l.Address = f.Addr
	}
	// An unresolved frame keeps its address as its function's name, which
	// is what pprof shows for it, and each address stays apart.
	l.Line = []profile.Line{{Function: pb.function(f.Function, f.File)}}
	pb.locations[key] = l
	pb.p.Location = append(pb.p.Location, l)
	return l
}

func (pb *pprofBuilder) function(name, file string) *profile.Function {
	key := [2]string{name, file}
	if fn, ok := pb.functions[key]; ok {
		return fn
	}
	fn := &profile.Function{ID: uint64(len(pb.p.Function) + 1), Name: name, SystemName: name, Filename: file}
	pb.functions[key] = fn
	pb.p.Function = append(pb.p.Function, fn)
	return fn
}

// mainMapping makes the workload's executable the first mapping, which
// pprof shows as the profile's File: the first file of an outermost user
// frame that is not a shared library.
func (pb *pprofBuilder) mainMapping(ta *model.TimeAccounting) {
	var stacks [][]string
	for _, s := range ta.OnCPU {
		stacks = append(stacks, s.User)
	}
	for _, s := range ta.OffCPU {
		stacks = append(stacks, s.User)
	}
	for _, u := range stacks {
		if len(u) == 0 {
			continue
		}
		if f := parseFrame(u[len(u)-1], false).File; f != "" && !strings.Contains(f, ".so") {
			pb.mapping(f)
			return
		}
	}
}

// mapping returns the file's mapping, nil when the frame names no file.
// HasFunctions tells pprof the frames are symbolised already, so that it
// does not look for the binaries.
func (pb *pprofBuilder) mapping(file string) *profile.Mapping {
	if file == "" {
		return nil
	}
	if m, ok := pb.mappings[file]; ok {
		return m
	}
	m := &profile.Mapping{ID: uint64(len(pb.p.Mapping) + 1), File: file, HasFunctions: true}
	pb.mappings[file] = m
	pb.p.Mapping = append(pb.p.Mapping, m)
	return m
}
