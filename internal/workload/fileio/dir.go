package fileio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// Prepare writes each file in writes of --bs bytes, but at least one page and
// at most layoutMaxChunk. Large writes would be faster, but the page cache
// keeps the large folios they create, and on ext4 (kernel 6.18 here) every
// later 4 KiB buffered write into a 1 MiB-written file walks the whole folio's
// buffer heads: 4 KiB random writes ran at 42-50k/s after a 1 MiB-chunk layout
// against 370k/s after a 4 KiB one (ext4_block_write_begin was 60% of CPU).
// fio lays files out with writes of the job's block size too.
const (
	layoutMinChunk = 4096
	layoutMaxChunk = 8 << 20
	// cancelCheckBytes is how much prepare writes between checks of ctx.
	cancelCheckBytes = 1 << 20
)

// FileIO is one configured fileio benchmark. It implements workload.Workload.
type FileIO struct {
	cfg      model.FileIOConfig
	fileSize int64
	prep     model.PrepareStats
	prepared bool
	// owned lists the base names of the files this run may delete: the ones it
	// created or reused, all recorded in the marker.
	owned []string
	// wroteMarker is true once this run wrote the marker, which then is its
	// to remove; a marker left by an earlier --keep run is not.
	wroteMarker bool
	// noSpaceCheck skips the free-space check, so tests can run prepare into
	// a full file system.
	noSpaceCheck bool
}

// marker is the content of .perfsleuth-fileio: the files perfsleuth created in
// the directory. Complete is false while prepare is writing them.
type marker struct {
	Version  int          `json:"version"`
	Complete bool         `json:"complete"`
	BS       int64        `json:"bs"`
	Files    []markerFile `json:"files"`
}

type markerFile struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
}

const markerVersion = 1

// patternSize is the period of the data prepare writes: 1 MiB of
// pseudo-random bytes, too long for block-level dedup or compression to find.
const patternSize = 1 << 20

// New validates cfg and checks a given --dir; it creates nothing. Prepare
// creates the directory when cfg.Dir is empty. A caller that created Dir for
// this run itself says so with DirCreated, and Cleanup then removes it too
// (when empty of anything but perfsleuth's files).
func New(cfg model.FileIOConfig) (*FileIO, error) {
	if err := Validate(&cfg); err != nil {
		return nil, err
	}
	if cfg.Dir == "" {
		cfg.DirCreated = false
	} else {
		abs, err := filepath.Abs(cfg.Dir)
		if err != nil {
			return nil, fmt.Errorf("--dir %s: %w", cfg.Dir, err)
		}
		cfg.Dir = abs
		if _, err := checkDir(cfg.Dir, cfg.Files, cfg.Force); err != nil {
			return nil, err
		}
	}
	return &FileIO{cfg: cfg, fileSize: fileSize(cfg)}, nil
}

// Config returns the settings the run uses, defaults filled in; after
// Prepare, Dir is the absolute work directory and DirCreated says whether
// perfsleuth created it.
func (f *FileIO) Config() model.FileIOConfig { return f.cfg }

// fileName is the base name of file i.
func fileName(i int) string { return filePrefix + strconv.Itoa(i) }

// isOurName reports whether name is one perfsleuth gives its data files.
func isOurName(name string) bool {
	rest, ok := strings.CutPrefix(name, filePrefix)
	if !ok || rest == "" {
		return false
	}
	for _, c := range rest {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// checkDir checks that dir exists, is a writable directory and holds nothing
// perfsleuth did not create (unless force), and returns its marker (nil when
// there is none).
func checkDir(dir string, files int, force bool) (*marker, error) {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("--dir %s does not exist: create it or omit --dir", dir)
	}
	if err != nil {
		return nil, fmt.Errorf("--dir %s: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("--dir %s is not a directory: give a directory or omit --dir", dir)
	}
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return nil, fmt.Errorf("--dir %s is not writable (%s): use another --dir or omit --dir", dir, errnoText(err))
	}
	m, merr := readMarker(dir)
	if merr != nil && !force {
		return nil, fmt.Errorf("--dir %s: %w: remove it, use an empty directory or --force", dir, merr)
	}
	ours := map[string]bool{markerName: true, markerName + ".tmp": true}
	if m != nil {
		for _, mf := range m.Files {
			ours[mf.Name] = true
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("--dir %s: %w", dir, err)
	}
	var foreign []string
	for _, e := range entries {
		if !ours[e.Name()] {
			foreign = append(foreign, e.Name())
		}
	}
	if len(foreign) > 0 && !force {
		more := ""
		if len(foreign) > 1 {
			more = fmt.Sprintf(" and %d more", len(foreign)-1)
		}
		return nil, fmt.Errorf("--dir %s holds files perfsleuth did not create (e.g. %s%s): use an empty directory or --force", dir, foreign[0], more)
	}
	// --force lets perfsleuth write beside other files, never over them.
	for _, name := range foreign {
		if isOurName(name) {
			if n, _ := strconv.Atoi(strings.TrimPrefix(name, filePrefix)); n < files {
				return nil, fmt.Errorf("--dir %s holds %s, which perfsleuth did not create and would overwrite: move it away or use another --dir", dir, name)
			}
		}
	}
	if merr != nil {
		return nil, nil // --force: an unreadable marker names nothing as ours
	}
	return m, nil
}

// readMarker returns dir's marker, nil if there is none. A marker naming
// anything but perfsleuth's own files is rejected, so a damaged or hand-made
// marker can never make Cleanup delete other files.
func readMarker(dir string) (*marker, error) {
	b, err := os.ReadFile(filepath.Join(dir, markerName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", markerName, err)
	}
	var m marker
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s is not a perfsleuth marker (%v)", markerName, err)
	}
	for _, mf := range m.Files {
		if !isOurName(mf.Name) {
			return nil, fmt.Errorf("%s lists %q, which is not a perfsleuth file name", markerName, mf.Name)
		}
	}
	return &m, nil
}

// writeMarker replaces the directory's marker atomically (write, rename), so
// a reader sees the old list or the new one, never half of one.
func (f *FileIO) writeMarker(m *marker) error {
	dir := f.cfg.Dir
	f.wroteMarker = true
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, markerName+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, markerName)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", filepath.Join(dir, markerName), err)
	}
	return nil
}

// reusable reports whether m describes exactly the files this run needs, all
// present with the right size.
func (f *FileIO) reusable(m *marker) bool {
	if m == nil || !m.Complete || len(m.Files) != f.cfg.Files {
		return false
	}
	for i, mf := range m.Files {
		if mf.Name != fileName(i) || mf.Size != f.fileSize {
			return false
		}
		st, err := os.Lstat(filepath.Join(f.cfg.Dir, mf.Name))
		if err != nil || !st.Mode().IsRegular() || st.Size() != f.fileSize {
			return false
		}
	}
	return true
}

// Prepare creates the work directory if none was given, then reuses kept
// files of the right size or lays the files out afresh. On any error or
// cancellation it removes what it created.
func (f *FileIO) Prepare(ctx context.Context) (err error) {
	start := time.Now()
	var old *marker
	if f.cfg.Dir == "" {
		dir, err := os.MkdirTemp(".", dirPattern)
		if err != nil {
			return fmt.Errorf("create the work directory in the current directory: %w: use --dir", err)
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			os.Remove(dir)
			return fmt.Errorf("create the work directory: %w", err)
		}
		f.cfg.Dir, f.cfg.DirCreated = abs, true
	} else {
		// Check again: the directory may have changed since New.
		if old, err = checkDir(f.cfg.Dir, f.cfg.Files, f.cfg.Force); err != nil {
			return err
		}
	}
	defer func() {
		if err != nil {
			f.removeAll()
		}
	}()

	names := make([]string, f.cfg.Files)
	for i := range names {
		names[i] = fileName(i)
	}
	total := f.fileSize * int64(f.cfg.Files)
	m := &marker{Version: markerVersion, BS: f.cfg.BS}
	for _, n := range names {
		m.Files = append(m.Files, markerFile{Name: n, Size: f.fileSize})
	}

	if f.reusable(old) {
		f.owned = names
		m.Complete = true
		if err := f.writeMarker(m); err != nil {
			return err
		}
		f.prep = model.PrepareStats{Files: f.cfg.Files, Bytes: total, DurationSec: time.Since(start).Seconds(), Reused: true}
		f.prepared = true
		return nil
	}

	// Files kept by an earlier run with another layout are ours to replace;
	// they count as free space since they go first.
	var freed int64
	var oldNames []string
	if old != nil {
		for _, mf := range old.Files {
			oldNames = append(oldNames, mf.Name)
			var st unix.Stat_t
			if unix.Lstat(filepath.Join(f.cfg.Dir, mf.Name), &st) == nil {
				freed += st.Blocks * 512
			}
		}
	}
	if !f.noSpaceCheck {
		var sfs unix.Statfs_t
		if err := unix.Statfs(f.cfg.Dir, &sfs); err != nil {
			return fmt.Errorf("statfs %s: %s", f.cfg.Dir, errnoText(err))
		}
		free := int64(sfs.Bavail)*int64(sfs.Bsize) + freed
		if total > free {
			return fmt.Errorf("--size %s needs %s in %s but only %s is free: lower --size or use another --dir",
				human(f.cfg.Size), human(total), f.cfg.Dir, human(free))
		}
	}
	f.owned = oldNames
	for _, name := range oldNames {
		if err := os.Remove(filepath.Join(f.cfg.Dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove the kept file %s: %w", name, err)
		}
	}
	// The marker lists the files before they exist, so that a crash leaves
	// them recognisably ours.
	f.owned = names
	if err := f.writeMarker(m); err != nil {
		return err
	}
	chunk := min(max(f.cfg.BS, layoutMinChunk), layoutMaxChunk, f.fileSize)
	pattern := make([]byte, patternSize)
	fillRandom(pattern, rand.NewPCG(uint64(f.cfg.Seed), patternStream))
	// buf holds the pattern from every offset a chunk can start at.
	buf := make([]byte, patternSize+chunk)
	for i := range buf {
		buf[i] = pattern[i%patternSize]
	}
	for _, name := range names {
		if err := layOut(ctx, filepath.Join(f.cfg.Dir, name), f.fileSize, chunk, buf); err != nil {
			return err
		}
	}
	m.Complete = true
	if err := f.writeMarker(m); err != nil {
		return err
	}
	f.prep = model.PrepareStats{Files: f.cfg.Files, Bytes: total, DurationSec: time.Since(start).Seconds()}
	f.prepared = true
	return nil
}

// layOut writes size bytes of the repeating pattern to path in writes of
// chunk bytes and fsyncs it. buf is the pattern followed by its first chunk
// bytes, so the write at offset off is buf[off%patternSize:][:chunk].
func layOut(ctx context.Context, path string, size, chunk int64, buf []byte) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return fmt.Errorf("prepare: create %s: %s", path, errnoText(err))
	}
	defer unix.Close(fd)
	sinceCheck := int64(cancelCheckBytes)
	for off := int64(0); off < size; {
		if sinceCheck += chunk; sinceCheck >= cancelCheckBytes {
			sinceCheck = 0
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		b := buf[off%patternSize:][:min(chunk, size-off)]
		n, err := unix.Pwrite(fd, b, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("prepare: %s", ioErrorText("pwrite", path, off, err))
		}
		if n == 0 {
			return fmt.Errorf("prepare: pwrite %s at offset %d wrote nothing (is the file system full?)", path, off)
		}
		off += int64(n)
	}
	if err := unix.Fsync(fd); err != nil {
		return fmt.Errorf("prepare: fsync %s: %s", path, errnoText(err))
	}
	return nil
}

// Cleanup removes the files perfsleuth created or reused, the marker and a
// directory it created, unless --keep. Files it did not create are never
// touched. It is safe to call more than once.
func (f *FileIO) Cleanup() error {
	if f.cfg.Keep && f.prepared {
		return nil
	}
	return f.removeAll()
}

// removeAll removes the owned files, the marker and a created directory.
func (f *FileIO) removeAll() error {
	if f.cfg.Dir == "" {
		return nil
	}
	var errs []error
	names := f.owned
	if f.wroteMarker {
		names = append(names[:len(names):len(names)], markerName, markerName+".tmp")
	}
	for _, name := range names {
		err := os.Remove(filepath.Join(f.cfg.Dir, name))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if f.cfg.DirCreated {
		err := os.Remove(f.cfg.Dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			// Never RemoveAll: whatever else is there, someone else put it there.
			errs = append(errs, fmt.Errorf("remove the work directory %s: %w (it holds files perfsleuth did not create)", f.cfg.Dir, err))
		}
	}
	f.prepared = false
	if len(errs) == 0 {
		f.owned, f.wroteMarker = nil, false
	}
	return errors.Join(errs...)
}

// fillRandom fills b with pseudo-random bytes.
func fillRandom(b []byte, src *rand.PCG) {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		v := src.Uint64()
		b[i], b[i+1], b[i+2], b[i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
		b[i+4], b[i+5], b[i+6], b[i+7] = byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56)
	}
	for v := src.Uint64(); i < len(b); i++ {
		b[i] = byte(v)
		v >>= 8
	}
}

// errnoText turns a syscall error into "no space left on device (ENOSPC)".
func errnoText(err error) string {
	var e unix.Errno
	if errors.As(err, &e) {
		if name := unix.ErrnoName(e); name != "" {
			return fmt.Sprintf("%s (%s)", e.Error(), name)
		}
	}
	return err.Error()
}

// ioErrorText describes a failed read or write: the call, file, offset, errno
// and, for a full disk, what to do.
func ioErrorText(call, path string, off int64, err error) string {
	s := fmt.Sprintf("%s %s at offset %d: %s", call, path, off, errnoText(err))
	if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) {
		s += ": the file system is full, lower --size or use another --dir"
	}
	return s
}
