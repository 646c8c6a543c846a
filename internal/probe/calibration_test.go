package probe

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

type testCosts struct{ Ns [2]float64 }

// TestCalibrationCache: a calibration is measured once per process, kept on
// disk for the next process of the same boot, object and setting within
// CalibrationMaxAge, and measured again otherwise.
func TestCalibrationCache(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	boot := filepath.Join(t.TempDir(), "boot_id")
	if err := os.WriteFile(boot, []byte("boot-a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := bootIDPath
	bootIDPath = boot
	t.Cleanup(func() { bootIDPath = old })

	calls := 0
	measure := func() (*testCosts, error) {
		calls++
		return &testCosts{Ns: [2]float64{float64(calls), 42}}, nil
	}
	process := func(object string) *Calibrations[bool, *testCosts] {
		return &Calibrations[bool, *testCosts]{Name: "test", Object: []byte(object)}
	}
	get := func(c *Calibrations[bool, *testCosts], key bool, want int) {
		t.Helper()
		got, note := c.Get(key, measure)
		if note != "" || got == nil {
			t.Fatalf("Get: %v, note %q", got, note)
		}
		if calls != want {
			t.Errorf("%d calibrations made, want %d", calls, want)
		}
		if got.Ns[1] != 42 {
			t.Errorf("costs %+v, want what was measured", got)
		}
	}

	first := process("object-a")
	get(first, true, 1)
	get(first, true, 1)                // the same process
	get(process("object-a"), true, 1)  // the next process: from disk
	get(process("object-a"), false, 2) // another setting
	get(process("object-b"), true, 3)  // other programs

	// Older than CalibrationMaxAge: measured again.
	path := first.path(true)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s storedCalibration[*testCosts]
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	s.MeasuredAt = time.Now().Add(-CalibrationMaxAge - time.Minute)
	b, _ = json.Marshal(s)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	get(process("object-a"), true, 4)
	get(process("object-a"), true, 4) // and kept again

	// Another boot: measured again.
	if err := os.WriteFile(boot, []byte("boot-b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	get(process("object-a"), true, 5)

	// A damaged file: measured again, and replaced.
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	get(process("object-a"), true, 6)
	get(process("object-a"), true, 6)

	// A failed calibration is not kept.
	failing := process("object-c")
	if _, note := failing.Get(true, func() (*testCosts, error) { return nil, errors.New("no statistics") }); note != "no statistics" {
		t.Errorf("note %q, want the error", note)
	}
	get(process("object-c"), true, 7)

	// Nothing but calibrations in the cache directory: no temporary file left.
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".json" {
			t.Errorf("%s left in the cache directory", e.Name())
		}
	}
}

// TestCalibrationNoName: without a Name nothing goes to disk.
func TestCalibrationNoName(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", dir)
	var c Calibrations[int, *testCosts]
	c.Get(1, func() (*testCosts, error) { return &testCosts{}, nil })
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("%d entries written to the cache directory without a name", len(entries))
	}
}
