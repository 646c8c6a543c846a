package export

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
)

// otlpFrames is sample s's stack as "function@mapping-file", leaf first,
// read back through the dictionary.
func otlpFrames(d pprofile.ProfilesDictionary, s pprofile.Sample) []string {
	str := d.StringTable()
	var out []string
	st := d.StackTable().At(int(s.StackIndex()))
	for _, li := range st.LocationIndices().All() {
		l := d.LocationTable().At(int(li))
		fn := d.FunctionTable().At(int(l.Lines().At(0).FunctionIndex()))
		m := d.MappingTable().At(int(l.MappingIndex()))
		out = append(out, str.At(int(fn.NameStrindex()))+"@"+str.At(int(m.FilenameStrindex())))
	}
	return out
}

// TestOTLPProfilesCarryThePprof: the pprof profile of a record, turned
// into an OTLP profiles request and decoded again from its protobuf,
// holds one profile per sample type with the same totals, the same
// stacks and labels, each table's entry 0 empty, and the pprof bytes as
// the first profile's original payload.
func TestOTLPProfilesCarryThePprof(t *testing.T) {
	b, err := Pprof(stackRun())
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.ParseData(b)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := OTLPProfiles(p, b, map[string]string{"service.name": "perfsleuth-agent", "host.name": "h1"}, "test")
	if err != nil {
		t.Fatal(err)
	}
	wire, err := pprofileotlp.NewExportRequestFromProfiles(ps).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	req := pprofileotlp.NewExportRequest()
	if err := req.UnmarshalProto(wire); err != nil {
		t.Fatalf("the request does not decode: %v", err)
	}
	got := req.Profiles()
	d := got.Dictionary()
	str := d.StringTable()
	if str.At(0) != "" || d.StackTable().At(0).LocationIndices().Len() != 0 || d.FunctionTable().At(0).NameStrindex() != 0 ||
		d.LocationTable().At(0).Lines().Len() != 0 || d.MappingTable().At(0).FilenameStrindex() != 0 {
		t.Error("entry 0 of a table is not the empty one")
	}
	if got.ResourceProfiles().Len() != 1 || got.ResourceProfiles().At(0).ScopeProfiles().Len() != 1 {
		t.Fatalf("%d resources, want 1 with 1 scope", got.ResourceProfiles().Len())
	}
	rp := got.ResourceProfiles().At(0)
	if v, _ := rp.Resource().Attributes().Get("host.name"); v.Str() != "h1" {
		t.Errorf("resource %v, want host.name h1", rp.Resource().Attributes().AsRaw())
	}
	profs := rp.ScopeProfiles().At(0).Profiles()
	if profs.Len() != len(p.SampleType) {
		t.Fatalf("%d profiles, want one per pprof sample type (%d)", profs.Len(), len(p.SampleType))
	}
	want := sampleTotals(p)
	ids := map[pprofile.ProfileID]bool{}
	for i := range profs.Len() {
		prof := profs.At(i)
		typ := str.At(int(prof.SampleType().TypeStrindex()))
		unit := str.At(int(prof.SampleType().UnitStrindex()))
		if typ != p.SampleType[i].Type || unit != p.SampleType[i].Unit {
			t.Errorf("profile %d is %s/%s, want %s/%s", i, typ, unit, p.SampleType[i].Type, p.SampleType[i].Unit)
		}
		var sum int64
		for _, s := range prof.Samples().All() {
			if s.Values().Len() != 1 {
				t.Fatalf("%s: a sample with %d values, want 1", typ, s.Values().Len())
			}
			sum += s.Values().At(0)
		}
		if sum != want[typ] {
			t.Errorf("%s: total %d, want pprof's %d", typ, sum, want[typ])
		}
		if int64(prof.Time()) != p.TimeNanos || int64(prof.DurationNano()) != p.DurationNanos {
			t.Errorf("%s: time %d +%d, want %d +%d", typ, prof.Time(), prof.DurationNano(), p.TimeNanos, p.DurationNanos)
		}
		if typ == "cpu" && (prof.Period() != p.Period || str.At(int(prof.PeriodType().TypeStrindex())) != "cpu") {
			t.Errorf("cpu: period %d of %s, want %d of cpu", prof.Period(), str.At(int(prof.PeriodType().TypeStrindex())), p.Period)
		}
		ids[prof.ProfileID()] = true
		if i == 0 {
			if prof.OriginalPayloadFormat() != "pprof" || !bytes.Equal(prof.OriginalPayload().AsRaw(), b) {
				t.Errorf("the first profile's original payload: format %q, %d bytes; want the %d pprof bytes", prof.OriginalPayloadFormat(), prof.OriginalPayload().Len(), len(b))
			}
		} else if prof.OriginalPayload().Len() != 0 {
			t.Errorf("%s: the pprof bytes again", typ)
		}
	}
	if len(ids) != profs.Len() {
		t.Errorf("%d distinct profile ids for %d profiles", len(ids), profs.Len())
	}
	// The first on-CPU stack and its labels, as the pprof has them.
	first := profs.At(0).Samples().At(0)
	var wantFrames []string
	for _, l := range p.Sample[0].Location {
		wantFrames = append(wantFrames, l.Line[0].Function.Name+"@"+l.Mapping.File)
	}
	if got := otlpFrames(d, first); strings.Join(got, " ") != strings.Join(wantFrames, " ") {
		t.Errorf("first stack %q, want %q", got, wantFrames)
	}
	labels := map[string]string{}
	for _, ai := range first.AttributeIndices().All() {
		a := d.AttributeTable().At(int(ai))
		labels[str.At(int(a.KeyStrindex()))] = a.Value().AsString()
	}
	if want := fmt.Sprint(map[string]string{"category": "cpu", "pid": "100", "process": "app", "thread": hostileComm, "tid": "101"}); fmt.Sprint(labels) != want {
		t.Errorf("labels %v, want %s", labels, want)
	}
	// Each string, stack and attribute once.
	seen := map[string]bool{}
	for _, s := range str.All() {
		if seen[s] {
			t.Errorf("string %q twice in the table", s)
		}
		seen[s] = true
	}
	if n := d.StackTable().Len() - 1; n > len(p.Sample) {
		t.Errorf("%d stacks for %d pprof samples", n, len(p.Sample))
	}
}

func TestOTLPProfilesOfNothing(t *testing.T) {
	if _, err := OTLPProfiles(&profile.Profile{}, nil, nil, "test"); err == nil {
		t.Error("an empty profile converted without an error")
	}
}
