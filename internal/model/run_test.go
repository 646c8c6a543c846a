package model

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestSaveLoadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.json")
	run := &Run{SchemaVersion: SchemaVersion, StartedAt: time.Unix(100, 0).UTC(),
		Target: Target{Kind: "null", Null: &NullConfig{Ops: 3}},
		Result: &Result{DurationSec: 1.5, Null: &NullResult{Ops: 3}}, Warnings: []string{"w"}}
	if err := Save(run, path); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, run) {
		t.Errorf("loaded %+v, saved %+v", got, run)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
	// WriteAtomic leaves no temporary file behind.
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("files left: %v", ents)
	}
}

func TestLoadRejects(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ body, want string }{
		{`not json`, "is not a perfsleuth run record (not JSON)"},
		{``, "(the file is empty)"},
		{`[1, 2]`, "(JSON, but not an object as a record is)"},
		{`{"schema_version": 3, "target": {"kind": "sql`, "(it ends early, after 45 bytes: truncated?)"},
		{"{\n\"schema_version\": 3,\n\"target\": nul}", "(not valid JSON at byte 37, line 3: damaged or edited?)"},
		{`{"schema_version": "three"}`, "(its field schema_version holds a JSON string where a record holds a number)"},
		{`{"name": "x"}`, "no schema_version"},
		{`{"schema_version": 99}`, "upgrade perfsleuth"},
	} {
		path := filepath.Join(dir, "r.json")
		os.WriteFile(path, []byte(tc.body), 0o644)
		if _, err := Load(path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.body, err, tc.want)
		}
	}
}

func TestWriteAtomicFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	// The destination is a directory: the rename fails.
	dst := filepath.Join(dir, "taken")
	os.Mkdir(dst, 0o755)
	os.WriteFile(filepath.Join(dst, "x"), nil, 0o644)
	if err := WriteAtomic(dst, []byte("data")); err == nil {
		t.Fatal("writing over a non-empty directory succeeded")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}
}

// FuzzLoad: whatever the file holds, Load returns a record or an error in
// its own words, never a panic nor the decoder's message alone.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(`{"schema_version": 1, "target": {"kind": "sqlite"}}`))
	f.Add([]byte(`{"schema_version": 1, "experiments": {"conditions": [{"name": "baseline", "runs": [{"seq": 1}]}]}}`))
	f.Add([]byte(`not json`))
	f.Add([]byte(`{"schema_version": 3, "target": {"kind": "sql`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, body []byte) {
		path := filepath.Join(dir, "r.json")
		if err := os.WriteFile(path, body, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Load(path)
		switch {
		case err == nil && (r == nil || r.SchemaVersion < 1 || r.SchemaVersion > SchemaVersion):
			t.Errorf("record %+v accepted", r)
		case err != nil && !strings.Contains(err.Error(), path+" "):
			t.Errorf("error %q does not name the file", err)
		}
	})
}
