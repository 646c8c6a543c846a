package export

import (
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// OTLPProfiles turns a pprof profile (Pprof's, parsed) into OpenTelemetry's
// profiles signal (OTLP profiles, v1development, as the collector's pdata
// module models it): one profile per sample type (the signal's profile
// has one), the frames, functions, mappings, stacks and labels in the
// request's shared dictionary, each once, and index 0 of every table the
// empty entry the format reserves. The first profile also carries the
// pprof bytes themselves (original_payload, format "pprof"), so that a
// backend that reads pprof gets the profile as it was taken. resource
// names the source (host.name, service.name ...).
func OTLPProfiles(p *profile.Profile, payload []byte, resource map[string]string, version string) (pprofile.Profiles, error) {
	out := pprofile.NewProfiles()
	if len(p.SampleType) == 0 || len(p.Sample) == 0 {
		return out, errors.New("the pprof profile has no samples")
	}
	d := newOTLPDict(out.Dictionary())
	rp := out.ResourceProfiles().AppendEmpty()
	for _, k := range slices.Sorted(maps.Keys(resource)) {
		rp.Resource().Attributes().PutStr(k, resource[k])
	}
	sp := rp.ScopeProfiles().AppendEmpty()
	sp.Scope().SetName("perfsleuth")
	sp.Scope().SetVersion(version)
	// Stacks and labels are the same whatever the type: made once.
	stacks := make([]int32, len(p.Sample))
	attrs := make([][]int32, len(p.Sample))
	for i, s := range p.Sample {
		if len(s.Value) != len(p.SampleType) {
			return out, fmt.Errorf("pprof sample %d has %d values for %d sample types", i, len(s.Value), len(p.SampleType))
		}
		stacks[i] = d.stack(s.Location)
		attrs[i] = d.labels(s)
	}
	for t, st := range p.SampleType {
		prof := sp.Profiles().AppendEmpty()
		var id pprofile.ProfileID
		rand.Read(id[:])
		prof.SetProfileID(id)
		prof.SampleType().SetTypeStrindex(d.str(st.Type))
		prof.SampleType().SetUnitStrindex(d.str(st.Unit))
		prof.SetTime(pcommon.Timestamp(p.TimeNanos))
		prof.SetDurationNano(uint64(max(p.DurationNanos, 0)))
		if p.PeriodType != nil && p.PeriodType.Type == st.Type {
			prof.PeriodType().SetTypeStrindex(d.str(p.PeriodType.Type))
			prof.PeriodType().SetUnitStrindex(d.str(p.PeriodType.Unit))
			prof.SetPeriod(p.Period)
		}
		for i, s := range p.Sample {
			if s.Value[t] == 0 {
				continue
			}
			os := prof.Samples().AppendEmpty()
			os.SetStackIndex(stacks[i])
			os.Values().Append(s.Value[t])
			os.AttributeIndices().Append(attrs[i]...)
		}
		if t == 0 && len(payload) > 0 {
			prof.SetOriginalPayloadFormat("pprof")
			prof.OriginalPayload().FromRaw(payload)
		}
	}
	return out, nil
}

// otlpDict fills a ProfilesDictionary, each entry once (the pdata module's
// Set* helpers search their table linearly, for every entry).
type otlpDict struct {
	d         pprofile.ProfilesDictionary
	strings   map[string]int32
	mappings  map[uint64]int32 // by pprof mapping id
	functions map[uint64]int32 // by pprof function id
	locations map[uint64]int32 // by pprof location id
	stacks    map[string]int32 // by the location indices
	attrs     map[string]int32 // by key, unit and value
}

func newOTLPDict(d pprofile.ProfilesDictionary) *otlpDict {
	o := &otlpDict{d: d, strings: map[string]int32{}, mappings: map[uint64]int32{}, functions: map[uint64]int32{},
		locations: map[uint64]int32{}, stacks: map[string]int32{}, attrs: map[string]int32{}}
	// Index 0 of each table is the empty entry.
	o.str("")
	d.MappingTable().AppendEmpty()
	d.FunctionTable().AppendEmpty()
	d.LocationTable().AppendEmpty()
	d.StackTable().AppendEmpty()
	d.AttributeTable().AppendEmpty()
	d.LinkTable().AppendEmpty()
	return o
}

func (o *otlpDict) str(s string) int32 {
	if i, ok := o.strings[s]; ok {
		return i
	}
	i := int32(o.d.StringTable().Len())
	o.d.StringTable().Append(s)
	o.strings[s] = i
	return i
}

func (o *otlpDict) mapping(m *profile.Mapping) int32 {
	if m == nil {
		return 0
	}
	if i, ok := o.mappings[m.ID]; ok {
		return i
	}
	i := int32(o.d.MappingTable().Len())
	om := o.d.MappingTable().AppendEmpty()
	om.SetMemoryStart(m.Start)
	om.SetMemoryLimit(m.Limit)
	om.SetFileOffset(m.Offset)
	om.SetFilenameStrindex(o.str(m.File))
	o.mappings[m.ID] = i
	return i
}

func (o *otlpDict) function(f *profile.Function) int32 {
	if f == nil {
		return 0
	}
	if i, ok := o.functions[f.ID]; ok {
		return i
	}
	i := int32(o.d.FunctionTable().Len())
	of := o.d.FunctionTable().AppendEmpty()
	of.SetNameStrindex(o.str(f.Name))
	of.SetSystemNameStrindex(o.str(f.SystemName))
	of.SetFilenameStrindex(o.str(f.Filename))
	of.SetStartLine(f.StartLine)
	o.functions[f.ID] = i
	return i
}

func (o *otlpDict) location(l *profile.Location) int32 {
	if i, ok := o.locations[l.ID]; ok {
		return i
	}
	i := int32(o.d.LocationTable().Len())
	ol := o.d.LocationTable().AppendEmpty()
	ol.SetMappingIndex(o.mapping(l.Mapping))
	ol.SetAddress(l.Address)
	for _, ln := range l.Line {
		oln := ol.Lines().AppendEmpty()
		oln.SetFunctionIndex(o.function(ln.Function))
		oln.SetLine(ln.Line)
		oln.SetColumn(ln.Column)
	}
	o.locations[l.ID] = i
	return i
}

// stack is the index of the stack of locs, leaf first as in pprof.
func (o *otlpDict) stack(locs []*profile.Location) int32 {
	idx := make([]int32, len(locs))
	var key strings.Builder
	for j, l := range locs {
		idx[j] = o.location(l)
		key.WriteString(strconv.Itoa(int(idx[j])))
		key.WriteByte(',')
	}
	if i, ok := o.stacks[key.String()]; ok {
		return i
	}
	i := int32(o.d.StackTable().Len())
	o.d.StackTable().AppendEmpty().LocationIndices().Append(idx...)
	o.stacks[key.String()] = i
	return i
}

// labels are the indices of a sample's string and numeric labels in the
// attribute table, in key order.
func (o *otlpDict) labels(s *profile.Sample) []int32 {
	var out []int32
	for _, k := range slices.Sorted(maps.Keys(s.Label)) {
		for _, v := range s.Label[k] {
			out = append(out, o.attr(k, "", v, 0, false))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.NumLabel)) {
		for j, v := range s.NumLabel[k] {
			unit := ""
			if u := s.NumUnit[k]; j < len(u) {
				unit = u[j]
			}
			out = append(out, o.attr(k, unit, "", v, true))
		}
	}
	return out
}

func (o *otlpDict) attr(key, unit, s string, n int64, num bool) int32 {
	id := key + "\x00" + unit + "\x00"
	if num {
		id += "n" + strconv.FormatInt(n, 10)
	} else {
		id += "s" + s
	}
	if i, ok := o.attrs[id]; ok {
		return i
	}
	i := int32(o.d.AttributeTable().Len())
	a := o.d.AttributeTable().AppendEmpty()
	a.SetKeyStrindex(o.str(key))
	if unit != "" {
		a.SetUnitStrindex(o.str(unit))
	}
	if num {
		a.Value().SetInt(n)
	} else {
		a.Value().SetStr(s)
	}
	o.attrs[id] = i
	return i
}
