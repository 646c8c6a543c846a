package fileio

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// smallConfig is a fast configuration in dir: 64 blocks of 4 KiB in 1 file.
func smallConfig(dir string) model.FileIOConfig {
	c := Defaults()
	c.Dir, c.Size, c.DurationSec = dir, 64*4096, 0
	c.Ops = 100
	return c
}

// prepared returns a prepared FileIO for c; Cleanup runs when the test ends.
func prepared(t *testing.T, c model.FileIOConfig) *FileIO {
	t.Helper()
	f, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Cleanup() })
	if err := f.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	return f
}

// names lists dir's entries.
func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ns []string
	for _, e := range es {
		ns = append(ns, e.Name())
	}
	return ns
}

func TestPrepareLaysOutFiles(t *testing.T) {
	dir := t.TempDir()
	c := smallConfig(dir)
	c.Files, c.Size = 3, 3*64*4096+1000 // the extra 1000 bytes are rounded away
	f := prepared(t, c)

	want := []string{markerName, "perfsleuth-fileio.0", "perfsleuth-fileio.1", "perfsleuth-fileio.2"}
	if got := names(t, dir); !slices.Equal(got, want) {
		t.Fatalf("dir holds %q, want %q", got, want)
	}
	for i := range 3 {
		b, err := os.ReadFile(filepath.Join(dir, fileName(i)))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != 64*4096 {
			t.Errorf("%s is %d bytes, want %d", fileName(i), len(b), 64*4096)
		}
		// Real data: no block is zero, blocks differ from each other.
		seen := map[string]bool{}
		for off := 0; off < len(b); off += 4096 {
			blk := b[off : off+4096]
			if bytes.Count(blk, []byte{0}) > 64 {
				t.Fatalf("%s block at %d is mostly zero", fileName(i), off)
			}
			seen[string(blk)] = true
		}
		if len(seen) != 64 {
			t.Errorf("%s has %d distinct blocks of 64", fileName(i), len(seen))
		}
	}
	if f.prep.Files != 3 || f.prep.Bytes != 3*64*4096 || f.prep.Reused {
		t.Errorf("PrepareStats = %+v, want 3 files, %d bytes, not reused", f.prep, 3*64*4096)
	}
	m, err := readMarker(dir)
	if err != nil || m == nil || !m.Complete || len(m.Files) != 3 || m.Files[2].Size != 64*4096 || m.BS != 4096 {
		t.Errorf("marker = %+v, %v", m, err)
	}
}

func TestCleanupRemovesEverythingOnce(t *testing.T) {
	dir := t.TempDir()
	f := prepared(t, smallConfig(dir))
	if err := f.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if got := names(t, dir); len(got) != 0 {
		t.Errorf("after Cleanup the dir holds %q", got)
	}
	if err := f.Cleanup(); err != nil {
		t.Errorf("second Cleanup: %v", err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("Cleanup removed the given --dir: %v", err)
	}
}

func TestCreatedDirIsInCurrentDirAndRemoved(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	c := smallConfig("")
	f := prepared(t, c)
	got := f.Config()
	if !got.DirCreated || !filepath.IsAbs(got.Dir) || filepath.Dir(got.Dir) != cwd ||
		!strings.HasPrefix(filepath.Base(got.Dir), dirPattern) {
		t.Fatalf("Dir = %q (created %v), want an absolute %s* under %s", got.Dir, got.DirCreated, dirPattern, cwd)
	}
	if _, err := f.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if err := f.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if ns := names(t, cwd); len(ns) != 0 {
		t.Errorf("after Cleanup the current dir holds %q", ns)
	}
}

func TestDirMustExistAndBeADirectory(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	_, err := New(smallConfig(missing))
	if err == nil || err.Error() != "--dir "+missing+" does not exist: create it or omit --dir" {
		t.Errorf("missing dir: %v", err)
	}
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	if _, err := New(smallConfig(file)); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("a file as --dir: %v", err)
	}
}

func TestForeignFilesNeedForceAndSurvive(t *testing.T) {
	dir := t.TempDir()
	foo := filepath.Join(dir, "foo")
	os.WriteFile(foo, []byte("precious"), 0o644)
	os.WriteFile(filepath.Join(dir, "zed"), nil, 0o644)

	_, err := New(smallConfig(dir))
	want := "--dir " + dir + " holds files perfsleuth did not create (e.g. foo and 1 more): use an empty directory or --force"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}

	c := smallConfig(dir)
	c.Force = true
	f := prepared(t, c)
	if _, err := f.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if err := f.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"foo", "zed"}) {
		t.Errorf("after Cleanup the dir holds %q, want only the foreign files", got)
	}
	if b, _ := os.ReadFile(foo); string(b) != "precious" {
		t.Errorf("foreign file changed: %q", b)
	}
}

func TestForceNeverOverwritesAForeignFileWithOurName(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "perfsleuth-fileio.0"), []byte("not ours"), 0o644)
	c := smallConfig(dir)
	c.Force = true
	_, err := New(c)
	if err == nil || !strings.Contains(err.Error(), "holds perfsleuth-fileio.0, which perfsleuth did not create and would overwrite") {
		t.Errorf("got %v", err)
	}
}

// A marker naming other files must never make Cleanup delete them.
func TestMarkerNamingOtherFilesIsRejected(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, markerName), []byte(`{"version":1,"complete":true,"files":[{"name":"../victim","size":1}]}`), 0o644)
	_, err := New(smallConfig(dir))
	if err == nil || !strings.Contains(err.Error(), `lists "../victim", which is not a perfsleuth file name`) {
		t.Errorf("got %v", err)
	}
}

func TestKeepThenReuse(t *testing.T) {
	dir := t.TempDir()
	c := smallConfig(dir)
	c.Keep = true
	f := prepared(t, c)
	if _, err := f.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if err := f.Cleanup(); err != nil {
		t.Fatal(err)
	}
	want := []string{markerName, "perfsleuth-fileio.0"}
	if got := names(t, dir); !slices.Equal(got, want) {
		t.Fatalf("with --keep the dir holds %q, want %q", got, want)
	}
	ino := inode(t, filepath.Join(dir, "perfsleuth-fileio.0"))

	// Same sizes, another block size and no --keep: reused, then removed.
	c = smallConfig(dir)
	c.BS = 8192
	g := prepared(t, c)
	if !g.prep.Reused {
		t.Errorf("second run did not reuse the kept files: %+v", g.prep)
	}
	if inode(t, filepath.Join(dir, "perfsleuth-fileio.0")) != ino {
		t.Error("the kept file was replaced")
	}
	if err := g.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if got := names(t, dir); len(got) != 0 {
		t.Errorf("after Cleanup the dir holds %q", got)
	}
}

func TestKeptFilesOfAnotherSizeAreReplaced(t *testing.T) {
	dir := t.TempDir()
	c := smallConfig(dir)
	c.Keep, c.Files, c.Size = true, 2, 2*64*4096
	prepared(t, c).Cleanup()

	c = smallConfig(dir)
	c.Size = 32 * 4096
	g := prepared(t, c)
	if g.prep.Reused {
		t.Error("files of another size were reused")
	}
	want := []string{markerName, "perfsleuth-fileio.0"}
	if got := names(t, dir); !slices.Equal(got, want) {
		t.Errorf("dir holds %q, want %q (the earlier layout's files replaced)", got, want)
	}
	if st, _ := os.Stat(filepath.Join(dir, "perfsleuth-fileio.0")); st.Size() != 32*4096 {
		t.Errorf("perfsleuth-fileio.0 is %d bytes, want %d", st.Size(), 32*4096)
	}
}

func TestPrepareCancelledLeavesNothing(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f, err := New(smallConfig(""))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Prepare(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Prepare with a cancelled context: %v, want context.Canceled", err)
	}
	if ns := names(t, cwd); len(ns) != 0 {
		t.Errorf("after a cancelled Prepare the current dir holds %q", ns)
	}
	if err := f.Cleanup(); err != nil {
		t.Errorf("Cleanup after a failed Prepare: %v", err)
	}
}

// mountTmpfs mounts a tmpfs of size bytes under a temporary dir, or skips.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (needs root and CAP_SYS_ADMIN): %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

func TestNotEnoughSpace(t *testing.T) {
	dir := mountTmpfs(t, "1M")
	c := smallConfig(dir)
	c.Size = 4 << 20
	f, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	err = f.Prepare(context.Background())
	want := "--size 4 MiB needs 4 MiB in " + dir + " but only 1 MiB is free: lower --size or use another --dir"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	if ns := names(t, dir); len(ns) != 0 {
		t.Errorf("after the failed Prepare the dir holds %q", ns)
	}
}

func TestDiskFullMidPrepareLeavesNothing(t *testing.T) {
	dir := mountTmpfs(t, "1M")
	c := smallConfig(dir)
	c.Size = 4 << 20
	f, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	f.noSpaceCheck = true
	err = f.Prepare(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no space left on device (ENOSPC): the file system is full") ||
		!strings.Contains(err.Error(), filepath.Join(dir, "perfsleuth-fileio.0")+" at offset ") {
		t.Errorf("got %v, want an ENOSPC error naming the file and offset", err)
	}
	if ns := names(t, dir); len(ns) != 0 {
		t.Errorf("after the failed Prepare the dir holds %q", ns)
	}
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// The runner creates the work directory itself and passes DirCreated: the
// directory is then the workload's to remove.
func TestDirCreatedByTheCallerIsRemoved(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "perfsleuth-fileio-x")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c := smallConfig(dir)
	c.DirCreated = true
	f := prepared(t, c)
	if !f.Config().DirCreated {
		t.Error("DirCreated was dropped")
	}
	if err := f.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if ns := names(t, parent); len(ns) != 0 {
		t.Errorf("after Cleanup %s holds %q", parent, ns)
	}
}

// A file that cannot be opened when the run starts (here: removed after
// prepare) is an error that names it; the workers opened before it are
// closed, and nothing panics (newWorker's cleanup once closed a nil worker).
func TestRunWhoseFileIsGoneSaysSo(t *testing.T) {
	dir := t.TempDir()
	c := smallConfig(dir)
	c.Threads, c.Files = 2, 2
	f := prepared(t, c)
	gone := filepath.Join(f.Config().Dir, fileName(1))
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	_, err := f.Run(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), gone) {
		t.Fatalf("Run with %s removed: %v, want an error naming it", gone, err)
	}
}

// Validate refuses more open files than the process may have, before
// anything is written.
func TestValidateCountsOpenFiles(t *testing.T) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Skip(err)
	}
	c := smallConfig(t.TempDir())
	c.RW, c.Files, c.Size = "randwrite", 4, 1<<30
	c.Threads = int(lim.Cur/4) + 1
	if err := Validate(&c); err == nil || !strings.Contains(err.Error(), "ulimit -n") {
		t.Errorf("%d threads × 4 files with a limit of %d: %v, want the open-files limit named", c.Threads, lim.Cur, err)
	}
	c.Threads = 2
	if err := Validate(&c); err != nil {
		t.Errorf("2 threads × 4 files: %v", err)
	}
}
