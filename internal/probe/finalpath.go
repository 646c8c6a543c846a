package probe

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// FileName is a file as a probe first saw it, named by FinalPaths as it is
// at the run's end.
type FileName struct {
	Path string
	// Dev is "major:minor", Ino the inode, Gen its generation (0:
	// unknown). Deleted: it had no name left when first seen.
	Dev     string
	Ino     uint64
	Gen     uint32
	Deleted bool
	// FirstPath is set to the first name when the file was renamed (Path
	// is then its name at the end); Gone when no name leads to it.
	FirstPath string
	Gone      bool
}

// FinalPaths names each file as it is at the run's end: a file whose first
// name now names another file, or none, is looked for by its inode in the
// directory it was in (renames stay in their directory: a WAL segment, a
// temporary file made whole, a rotated log), and is given that name with
// its first one kept, or marked gone. Gen is each file's inode
// generation as first seen (0: unknown): a file system reuses a deleted
// file's inode number for the next file it makes, and the generation
// tells the two apart where the file system reports it
// (FS_IOC_GETVERSION: ext4, btrfs, ...). Each directory is read once, at
// most finalPathDirs of them, and a directory of more than
// finalPathEntries entries is not searched (the file then keeps its first
// name).
func FinalPaths(files []FileName) {
	dirs := map[string]map[uint64]string{}
	for i := range files {
		f := &files[i]
		if f.Deleted || !filepath.IsAbs(f.Path) {
			continue
		}
		var st unix.Stat_t
		err := unix.Stat(f.Path, &st)
		if err == nil && st.Ino == f.Ino && DevOf(st.Dev) == f.Dev {
			continue
		}
		if err != nil && !errors.Is(err, unix.ENOENT) {
			continue // not ours to see (EACCES): keep the first name
		}
		dir := filepath.Dir(f.Path)
		names, ok := dirs[dir]
		if !ok {
			if len(dirs) >= finalPathDirs {
				continue
			}
			names = inodeNames(dir, f.Dev)
			dirs[dir] = names
		}
		if names == nil {
			// The directory is gone too (rm -rf), or could not be read.
			if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
				f.Gone = true
			}
			continue
		}
		if name, ok := names[f.Ino]; ok {
			path := filepath.Join(dir, name)
			if f.Gen != 0 {
				if g, ok := Generation(path); ok && g != f.Gen {
					f.Gone = true // a later file given its inode
					continue
				}
			}
			f.FirstPath, f.Path = f.Path, path
			continue
		}
		f.Gone = true
	}
}

// finalPathDirs and finalPathEntries bound finalPaths' reading.
const (
	finalPathDirs    = 1000
	finalPathEntries = 100_000
)

// inodeNames maps the inodes of dir's regular files on device dev to their
// names; nil when dir cannot be read or holds more than finalPathEntries.
func inodeNames(dir, dev string) map[uint64]string {
	d, err := os.Open(dir)
	if err != nil {
		return nil
	}
	defer d.Close()
	var st unix.Stat_t
	if unix.Fstat(int(d.Fd()), &st) != nil || DevOf(st.Dev) != dev {
		return nil
	}
	entries, err := d.ReadDir(finalPathEntries + 1)
	// An empty directory reads as io.EOF: searched, and nothing there.
	if (err != nil && !errors.Is(err, io.EOF)) || len(entries) > finalPathEntries {
		return nil
	}
	names := map[uint64]string{}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if s, ok := info.Sys().(*syscall.Stat_t); ok {
			names[s.Ino] = e.Name()
		}
	}
	return names
}

// DevOf is a stat's device as the record writes it, "major:minor".
func DevOf(dev uint64) string { return fmt.Sprintf("%d:%d", unix.Major(dev), unix.Minor(dev)) }

// fsIocGetVersion is FS_IOC_GETVERSION, _IOR('v', 1, long), which
// golang.org/x/sys/unix does not name.
const fsIocGetVersion = 2<<30 | (strconv.IntSize/8)<<16 | 'v'<<8 | 1

// Generation is path's inode generation, false when the file system does
// not report it.
func Generation(path string) (uint32, bool) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOATIME, 0)
	if err != nil {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return 0, false
	}
	defer unix.Close(fd)
	// The kernel writes an int.
	v, err := unix.IoctlGetUint32(fd, fsIocGetVersion)
	if err != nil {
		return 0, false
	}
	return v, true
}
