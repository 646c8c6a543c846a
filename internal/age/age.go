// Package age is perfsleuth's aged-device write test (`perfsleuth bench
// age`), the phone-IO field report's experiment made repeatable: write a
// file on a fresh file system, then fill a bounded area of it with many
// small files, delete a share of them, and write the same file again. For
// each write it measures what the application wrote, what the file system
// wrote to its block device (the device's own counters, /proc/diskstats:
// data, metadata and journal, as iostat counts them) and how many extents
// the file took (FIEMAP), so that an aged file system's write
// amplification and fragmentation are numbers, before and after. On an
// NVMe device it also reads what the device says it wrote (nvme.go): what
// hosts sent it and, where it keeps the OCP log, what it wrote to its
// media; other devices' own counters are not read, and the result says so.
//
// Everything it makes lives in one scratch directory under the directory
// it is given, removed on every path, Ctrl-C included.
package age

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/procfs/blockdevice"
	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// Config is what bench age does.
type Config struct {
	// Dir is the directory on the file system to age; the scratch
	// directory is made in it.
	Dir string `json:"dir"`
	// Area is how much of the file system the small files take (their
	// size rounded up to the file system's block each).
	Area int64 `json:"area_bytes"`
	// Small is each small file's size (the field report's 6 KiB).
	Small int64 `json:"small_bytes"`
	// Delete is the share of the small files deleted before the second
	// write, spread evenly (every other file at 0.5): the holes between
	// the files that stay are the free space the aged write gets.
	Delete float64 `json:"delete_share"`
	// Write is the file written (and fsynced) fresh and aged.
	Write int64 `json:"write_bytes"`
}

// Defaults are bench age's defaults: 256 MiB of 6 KiB files, half
// deleted, a 64 MiB write.
func Defaults() Config {
	return Config{Dir: ".", Area: 256 << 20, Small: 6 << 10, Delete: 0.5, Write: 64 << 20}
}

// reserveShare is the share of the file system bench age leaves free at
// its fullest (the area and both writes in place): it refuses to run
// where it would fill the disk.
const reserveShare = 0.02

// Validate checks c against the file system under c.Dir, before anything
// is written.
func Validate(c *Config) error {
	switch {
	case c.Small <= 0:
		return fmt.Errorf("--small %d: give a size above 0 (6k is the field report's)", c.Small)
	case c.Area < c.Small:
		return fmt.Errorf("--area %s is smaller than one small file (--small %s): give a larger --area", units.FormatSize(c.Area), units.FormatSize(c.Small))
	case c.Write <= 0:
		return fmt.Errorf("--write %d: give a size above 0", c.Write)
	case !(c.Delete > 0 && c.Delete <= 1):
		return fmt.Errorf("--delete %g: give the share of the small files deleted, above 0 and at most 1 (0.5: every other file)", c.Delete)
	}
	fi, err := os.Stat(c.Dir)
	if err != nil {
		return fmt.Errorf("--dir %s: %w", c.Dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("--dir %s is not a directory", c.Dir)
	}
	if err := unix.Access(c.Dir, unix.W_OK); err != nil {
		return fmt.Errorf("--dir %s is not writable (%v): choose another directory", c.Dir, err)
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(c.Dir, &sfs); err != nil {
		return fmt.Errorf("statfs %s: %w", c.Dir, err)
	}
	size, free := int64(sfs.Blocks)*sfs.Bsize, int64(sfs.Bavail)*sfs.Bsize
	if need := Need(*c, size); need > free {
		return fmt.Errorf("bench age would fill the file system of %s: at its fullest it needs %s (the --area %s beside the fresh --write %s, or what stays of the area beside both writes, and %.0f%% of the file system left free) and %s is free: give a smaller --area or --write",
			c.Dir, units.FormatSize(need), units.FormatSize(c.Area), units.FormatSize(c.Write), reserveShare*100, units.FormatSize(free))
	}
	return nil
}

// Need is the most of a file system of size bytes that c takes at once:
// the area beside the fresh write, or, after the deletions, what stays of
// the area beside both writes; and reserveShare of it left free. An area
// near the free space less this is what ages a file system: the aged
// write then finds holes between small files where the fresh one found
// free space.
func Need(c Config, size int64) int64 {
	kept := int64(float64(c.Area) * (1 - c.Delete))
	return max(c.Area+c.Write, kept+2*c.Write) + int64(reserveShare*float64(size))
}

// Result is what bench age measured.
type Result struct {
	Config Config `json:"config"`
	// FS is the file system's type, Device the block device it writes
	// to (whose counters the writes are read from).
	FS     string `json:"fs"`
	Device string `json:"device"`
	// SizeBytes and FreeBytes are the file system's size and free space
	// before the test.
	SizeBytes int64 `json:"size_bytes"`
	FreeBytes int64 `json:"free_bytes"`
	// BlockSize is the file system's block: each small file takes its
	// size rounded up to it.
	BlockSize int64 `json:"block_size"`
	// RootReserveBytes are the blocks the file system keeps for root
	// (ext4's 5% by default), not in FreeBytes: run as root, the writes
	// may land there, where no small file was.
	RootReserveBytes int64 `json:"root_reserve_bytes,omitempty"`
	Root             bool  `json:"root,omitempty"`
	// Files is how many small files were made, Deleted how many of them
	// were deleted.
	Files   int64   `json:"files"`
	Deleted int64   `json:"deleted"`
	FillSec float64 `json:"fill_sec"`
	// Fresh is the write before the ageing, Aged the write after it.
	Fresh *Write `json:"fresh,omitempty"`
	Aged  *Write `json:"aged,omitempty"`
	// DeviceWrites says where the device's own write counters were read
	// (an NVMe device's SMART and OCP logs), or why they were not.
	DeviceWrites string `json:"device_writes"`
	// Interrupted: the test was stopped before it ended; what was
	// measured is here, and everything it made was removed.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Write is one measured write of the file.
type Write struct {
	// AppBytes is what the application wrote (write calls).
	AppBytes int64 `json:"app_bytes"`
	// DeviceBytes and DeviceRequests are what the file system's block
	// device completed for writes from the first write to the end of the
	// fsync: the file's data, the file system's metadata and journal,
	// and any other process's writes to that device in the meantime
	// (the counters are the device's).
	DeviceBytes    int64 `json:"device_bytes"`
	DeviceRequests int64 `json:"device_requests"`
	// Amplification is DeviceBytes over AppBytes.
	Amplification float64 `json:"amplification"`
	// NVMeHostBytes is what the NVMe device says hosts sent it in the
	// same time (its SMART log's data units written, in 512,000-byte
	// units, so a small write rounds; every namespace of the controller
	// counts); absent when not read.
	NVMeHostBytes int64 `json:"nvme_host_bytes,omitempty"`
	// MediaBytes is what the device says it wrote to its media (its OCP
	// log's physical media units written), MediaAmplification that over
	// AppBytes; absent when the device does not say.
	MediaBytes         int64   `json:"media_bytes,omitempty"`
	MediaAmplification float64 `json:"media_amplification,omitempty"`
	// Extents is how many extents the file took (FIEMAP); -1 when the
	// file system does not tell.
	Extents int64 `json:"extents"`
	// Seconds is the time from the first write to the end of the fsync.
	Seconds float64 `json:"seconds"`
}

// Phase names what Run is doing, for a progress line.
type Phase func(what string)

// Run runs the test: a fresh write, the ageing, an aged write. It
// removes everything it made before it returns, on every path; when ctx
// is cancelled it stops and returns what it measured with Interrupted
// set and a nil error.
func Run(ctx context.Context, c Config, phase Phase) (res *Result, err error) {
	if phase == nil {
		phase = func(string) {}
	}
	if err := Validate(&c); err != nil {
		return nil, err
	}
	st, err := sysinfo.StorageOf(c.Dir)
	if err != nil {
		return nil, err
	}
	if st.Device == "" {
		return nil, fmt.Errorf("%s is on %s, which has no block device whose writes can be counted: give a --dir on a disk's file system", c.Dir, st.FSType)
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(c.Dir, &sfs); err != nil {
		return nil, err
	}
	res = &Result{Config: c, FS: st.FSType, Device: st.Device, SizeBytes: st.SizeBytes, FreeBytes: st.FreeBytes, BlockSize: sfs.Bsize,
		RootReserveBytes: int64(sfs.Bfree-sfs.Bavail) * sfs.Bsize, Root: os.Geteuid() == 0}
	counters := countersOf("/sys", st.Device)
	if _, err := counters.read(); err != nil {
		res.DeviceWrites = err.Error()
		if counters.ctrl != "" {
			res.DeviceWrites = "not read: " + res.DeviceWrites
		}
		counters = counterSource{}
	} else {
		res.DeviceWrites = "read from " + counters.ctrl + "'s SMART log (data units written: what hosts sent it, in 512,000-byte units) and, where it keeps one, its OCP log (physical media units written)"
	}
	scratch, err := os.MkdirTemp(c.Dir, "perfsleuth-age.")
	if err != nil {
		return nil, fmt.Errorf("make the scratch directory in %s: %w", c.Dir, err)
	}
	defer func() {
		phase("removing what it made")
		if rmErr := os.RemoveAll(scratch); rmErr != nil {
			err = errors.Join(err, fmt.Errorf("remove %s: %w", scratch, rmErr))
		}
		syncDir(c.Dir)
	}()
	stopped := func() bool {
		if ctx.Err() != nil {
			res.Interrupted = true
			return true
		}
		return false
	}
	// Pseudo-random bytes, so that a device or file system that
	// compresses or deduplicates does not write less.
	buf := make([]byte, 1<<20)
	rand.NewChaCha8([32]byte{}).Read(buf)

	phase("fresh write")
	if res.Fresh, err = writeFile(ctx, filepath.Join(scratch, "fresh"), c.Write, buf, st.Device, counters); err != nil || stopped() {
		return res, err
	}
	phase("filling the area with small files")
	start := time.Now()
	small := filepath.Join(scratch, "small")
	if res.Files, err = fill(ctx, small, c.Area, c.Small, sfs.Bsize, buf); err != nil || stopped() {
		return res, err
	}
	phase("deleting small files")
	if res.Deleted, err = thin(ctx, small, res.Files, c.Delete); err != nil || stopped() {
		return res, err
	}
	syncDir(scratch)
	res.FillSec = time.Since(start).Seconds()
	phase("aged write")
	if res.Aged, err = writeFile(ctx, filepath.Join(scratch, "aged"), c.Write, buf, st.Device, counters); err != nil {
		return res, err
	}
	stopped()
	return res, nil
}

// onDisk is what a file of size bytes takes on a file system of block
// bytes: its size rounded up to the block.
func onDisk(size, block int64) int64 {
	return (size + block - 1) / block * block
}

// filesPerDir is how many small files each directory of the area holds.
const filesPerDir = 1000

// smallPath is the path of small file i under dir.
func smallPath(dir string, i int64) string {
	return filepath.Join(dir, fmt.Sprintf("%04d", i/filesPerDir), fmt.Sprintf("%04d", i%filesPerDir))
}

// fill makes small files of size bytes under dir until they take area
// bytes (each size rounded up to block), and syncs them; it returns how
// many it made.
func fill(ctx context.Context, dir string, area, size, block int64, buf []byte) (int64, error) {
	n := max(area/onDisk(size, block), 1)
	for i := int64(0); i < n; i++ {
		if i%filesPerDir == 0 {
			if ctx.Err() != nil {
				return i, nil
			}
			if err := os.MkdirAll(filepath.Dir(smallPath(dir, i)), 0o755); err != nil {
				return i, err
			}
		}
		if err := writeSmall(smallPath(dir, i), size, buf); err != nil {
			return i, err
		}
	}
	syncDir(dir)
	return n, nil
}

// writeSmall writes one small file of size bytes.
func writeSmall(path string, size int64, buf []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	for left := size; left > 0; {
		n := min(left, int64(len(buf)))
		if _, err := f.Write(buf[:n]); err != nil {
			f.Close()
			return fmt.Errorf("write %s: %w", path, err)
		}
		left -= n
	}
	return f.Close()
}

// thin deletes share of the n small files under dir, spread evenly (file
// i goes when floor((i+1)*share) passes floor(i*share): every other file
// at 0.5), and returns how many it deleted.
func thin(ctx context.Context, dir string, n int64, share float64) (int64, error) {
	var deleted int64
	for i := int64(0); i < n; i++ {
		if i%filesPerDir == 0 && ctx.Err() != nil {
			return deleted, nil
		}
		if int64(float64(i+1)*share) == int64(float64(i)*share) {
			continue
		}
		if err := os.Remove(smallPath(dir, i)); err != nil {
			return deleted, err
		}
		deleted++
	}
	return deleted, nil
}

// writeFile writes size bytes to a new file at path and fsyncs it,
// reading device's write counters just before the first write and just
// after the fsync; everything pending on the file system is synced before
// so that it does not count. Where counters has a controller, its own
// counters are read at the same moments.
func writeFile(ctx context.Context, path string, size int64, buf []byte, device string, counters counterSource) (*Write, error) {
	syncDir(filepath.Dir(path))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	before, err := deviceWrites(device)
	if err != nil {
		return nil, err
	}
	ownBefore, ownErr := counters.read()
	start := time.Now()
	var wrote int64
	for wrote < size {
		if ctx.Err() != nil {
			return nil, nil
		}
		n := min(size-wrote, int64(len(buf)))
		if _, err := f.Write(buf[:n]); err != nil {
			return nil, fmt.Errorf("write %s: %w", path, err)
		}
		wrote += n
	}
	if err := f.Sync(); err != nil {
		return nil, fmt.Errorf("fsync %s: %w", path, err)
	}
	secs := time.Since(start).Seconds()
	after, err := deviceWrites(device)
	if err != nil {
		return nil, err
	}
	w := &Write{AppBytes: wrote, DeviceBytes: int64(after.WriteSectors-before.WriteSectors) * 512,
		DeviceRequests: int64(after.WriteIOs - before.WriteIOs), Seconds: secs, Extents: extents(f)}
	if wrote > 0 {
		w.Amplification = float64(w.DeviceBytes) / float64(wrote)
	}
	if counters.ctrl != "" && ownErr == nil {
		if own, err := counters.read(); err == nil {
			w.NVMeHostBytes = own.Host - ownBefore.Host
			if own.Media >= 0 && ownBefore.Media >= 0 {
				w.MediaBytes = own.Media - ownBefore.Media
				if wrote > 0 {
					w.MediaAmplification = float64(w.MediaBytes) / float64(wrote)
				}
			}
		}
	}
	return w, nil
}

// deviceWrites reads device's counters in /proc/diskstats.
func deviceWrites(device string) (blockdevice.IOStats, error) {
	bd, err := blockdevice.NewFS("/proc", "/sys")
	if err != nil {
		return blockdevice.IOStats{}, err
	}
	stats, err := bd.ProcDiskstats()
	if err != nil {
		return blockdevice.IOStats{}, fmt.Errorf("read /proc/diskstats: %w", err)
	}
	for _, s := range stats {
		if s.DeviceName == device {
			return s.IOStats, nil
		}
	}
	return blockdevice.IOStats{}, fmt.Errorf("%s is not in /proc/diskstats", device)
}

// syncDir syncs the file system dir is on (syncfs): what was written
// before a measured write is on the device before it begins.
func syncDir(dir string) {
	f, err := os.Open(dir)
	if err != nil {
		return
	}
	defer f.Close()
	unix.Syncfs(int(f.Fd()))
}
