package probe

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// Files renamed or deleted during a run are reported under their name at
// the end, with the first one kept, or as gone (issue 18: PostgreSQL's WAL
// syncs listed under pg_wal/xlogtemp.9517, a name that no longer existed).
func TestFinalPaths(t *testing.T) {
	dir := t.TempDir()
	file := func(name string) FileName {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		g, _ := Generation(p)
		return FileName{Path: p, Dev: DevOf(st.Dev), Ino: st.Ino, Gen: g}
	}
	kept := file("kept")
	renamed := file("xlogtemp.9517")
	deleted := file("t.db-journal")
	replaced := file("log")
	inGoneDir := file("sub/tmpfile")
	if err := os.Rename(renamed.Path, filepath.Join(dir, "000000010000000000000005")); err != nil {
		t.Fatal(err)
	}
	os.Remove(deleted.Path)
	// log rotated: the old file is log.1 now, and a new log took its name
	// (and, on ext4, the deleted journal's inode number: its generation
	// tells them apart).
	os.Rename(replaced.Path, filepath.Join(dir, "log.1"))
	os.WriteFile(replaced.Path, []byte("new"), 0o644)
	os.RemoveAll(filepath.Join(dir, "sub"))

	files := []FileName{kept, renamed, deleted, replaced, inGoneDir}
	if _, ok := Generation(kept.Path); !ok {
		t.Skipf("the file system under %s reports no inode generation: a deleted file's inode given to a new one would read as a rename", dir)
	}
	FinalPaths(files)
	want := []struct {
		path, first string
		gone        bool
	}{
		{kept.Path, "", false},
		{filepath.Join(dir, "000000010000000000000005"), renamed.Path, false},
		{deleted.Path, "", true},
		{filepath.Join(dir, "log.1"), replaced.Path, false},
		{inGoneDir.Path, "", true},
	}
	for i, w := range want {
		f := files[i]
		if f.Path != w.path || f.FirstPath != w.first || f.Gone != w.gone {
			t.Errorf("file %d: path %q first %q gone %v, want %q %q %v", i, f.Path, f.FirstPath, f.Gone, w.path, w.first, w.gone)
		}
	}
}
