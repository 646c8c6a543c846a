package storage

import (
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/probe/timeacct"
)

// TestSharedThreadsMap: the storage probe is loaded with timeacct's threads
// map in place of its own, so both must be generated from the same
// bpf/timeacct.h. Regression: a field added to struct ta_thread and only
// timeacct regenerated (go generate ./internal/probe/timeacct/) made every
// storage load fail ("ValueSize: 352 changed to 328"): run go generate
// ./internal/probe/... after changing bpf/timeacct.h. No root needed.
func TestSharedThreadsMap(t *testing.T) {
	spec, err := loadStorage()
	if err != nil {
		t.Fatal(err)
	}
	m := spec.Maps["threads"]
	if m == nil {
		t.Fatal("the storage probe has no threads map")
	}
	if want := timeacct.ThreadEntrySize(); m.ValueSize != want {
		t.Errorf("the storage probe's threads map holds %d-byte values, timeacct's %d: regenerate both (go generate ./internal/probe/...)", m.ValueSize, want)
	}
}
