package scenarios

import (
	"path/filepath"
	"testing"
)

// Files renamed or deleted during the run: a segment written as a
// temporary file and renamed (PostgreSQL's xlogtemp.N, rsync's .name.XXXXXX)
// is reported under its final name with its first one; a file written and
// deleted (a rollback journal) is marked gone (issue 18).
func TestRenamedAndDeletedFiles(t *testing.T) {
	dir := t.TempDir()
	run := observed(t, dir, []string{"--storage"}, "sh", "-c",
		"dd if=/dev/zero of=xlogtemp.4242 bs=4k count=64 conv=fsync 2>/dev/null; mv xlogtemp.4242 000000010000000000000005; "+
			"dd if=/dev/zero of=journal.tmp bs=4k count=16 conv=fsync 2>/dev/null; rm journal.tmp")
	final := filepath.Join(dir, "000000010000000000000005")
	var seg, journal bool
	for _, f := range run.Storage.Files {
		switch {
		case f.Path == final:
			seg = true
			if f.FirstPath != filepath.Join(dir, "xlogtemp.4242") || f.Gone || f.Writes.Bytes != 64*4096 || f.Syncs == 0 {
				t.Errorf("the segment: %+v, want first path xlogtemp.4242, 256 KiB written and synced", f)
			}
		case f.Path == filepath.Join(dir, "journal.tmp"):
			journal = true
			if !f.Gone || f.FirstPath != "" {
				t.Errorf("the deleted file: %+v, want it gone", f)
			}
		case f.Path == filepath.Join(dir, "xlogtemp.4242"):
			t.Errorf("the segment is listed under its first name: %+v", f)
		}
	}
	if !seg || !journal {
		t.Errorf("segment found %v, deleted file found %v, in %+v", seg, journal, run.Storage.Files)
	}
}
