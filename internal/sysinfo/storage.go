package sysinfo

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/prometheus/procfs"
	"github.com/prometheus/procfs/blockdevice"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// StorageOf describes the file system and block devices behind dir. File
// systems without a block device (tmpfs, overlay, NFS) get what exists: mount
// point, type, options, source and sizes; that is not an error.
func StorageOf(dir string) (*model.Storage, error) {
	return storageOf(dir, "/proc", "/sys")
}

func storageOf(dir, procRoot, sysRoot string) (*model.Storage, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("storage of %s: %w", dir, err)
	}
	path, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("storage of %s: %w", dir, err)
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	s := &model.Storage{Dir: path}
	var sfs unix.Statfs_t
	if err := unix.Statfs(path, &sfs); err == nil {
		s.SizeBytes = int64(sfs.Blocks) * sfs.Bsize
		// Free is what df calls "Avail": usable without root's reserve.
		s.FreeBytes = int64(sfs.Bavail) * sfs.Bsize
	}

	fs, err := procfs.NewFS(procRoot)
	if err != nil {
		return s, fmt.Errorf("storage of %s: %w", path, err)
	}
	mounts, err := fs.GetMounts()
	if err != nil {
		return s, fmt.Errorf("read %s/self/mountinfo: %w", procRoot, err)
	}
	major, minor := unix.Major(st.Dev), unix.Minor(st.Dev)
	m := findMount(mounts, path, major, minor)
	if m == nil {
		return s, fmt.Errorf("no mount in %s/self/mountinfo holds %s", procRoot, path)
	}
	s.MountPoint = UnescapeMountinfo(m.MountPoint)
	s.FSType = m.FSType
	s.MountOptions = mountOptions(m)
	s.Source = UnescapeMountinfo(m.Source)

	// btrfs (and other multi-device file systems) give files an anonymous
	// st_dev (major 0); the source device then names the disk.
	if major == 0 && strings.HasPrefix(s.Source, "/dev/") {
		var sst unix.Stat_t
		if unix.Stat(s.Source, &sst) == nil && sst.Mode&unix.S_IFMT == unix.S_IFBLK {
			major, minor = unix.Major(sst.Rdev), unix.Minor(sst.Rdev)
		}
	}
	if major == 0 {
		return s, nil // tmpfs, overlay, proc, NFS: no block device
	}
	if err := fillDevice(s, procRoot, sysRoot, major, minor); err != nil {
		return s, err
	}
	return s, nil
}

// findMount picks the mount holding path: among the mounts whose mount point
// is a prefix of path, the longest, preferring those whose major:minor is the
// file's st_dev (bind mounts and stacked mounts make prefixes alone
// ambiguous). A later entry wins a tie: it is mounted on top.
func findMount(mounts []*procfs.MountInfo, path string, major, minor uint32) *procfs.MountInfo {
	dev := fmt.Sprintf("%d:%d", major, minor)
	pick := func(matchDev bool) *procfs.MountInfo {
		var best *procfs.MountInfo
		bestLen := -1
		for _, m := range mounts {
			if matchDev && m.MajorMinorVer != dev {
				continue
			}
			mp := UnescapeMountinfo(m.MountPoint)
			if !underMount(path, mp) {
				continue
			}
			if len(mp) >= bestLen {
				best, bestLen = m, len(mp)
			}
		}
		return best
	}
	if m := pick(true); m != nil {
		return m
	}
	// btrfs subvolumes have their own st_dev that mountinfo does not show.
	return pick(false)
}

func underMount(path, mp string) bool {
	if mp == "/" {
		return strings.HasPrefix(path, "/")
	}
	return path == mp || strings.HasPrefix(path, mp+"/")
}

// UnescapeMountinfo undoes the kernel's octal escapes (\040 for space, \011,
// \012, \134) in mountinfo paths; procfs returns them as they are.
func UnescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mountOptions joins per-mount and super-block options the way /proc/mounts
// shows them: rw/ro first, then the rest. procfs keeps them in maps, so the
// kernel's order is lost and the rest is sorted.
func mountOptions(m *procfs.MountInfo) string {
	seen := map[string]bool{}
	var first []string
	var rest []string
	add := func(opts map[string]string) {
		keys := make([]string, 0, len(opts))
		for k := range opts {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if k == "" || seen[k] {
				continue
			}
			seen[k] = true
			o := k
			if v := opts[k]; v != "" {
				o = k + "=" + v
			}
			if k == "rw" || k == "ro" {
				first = append(first, o)
			} else {
				rest = append(rest, o)
			}
		}
	}
	add(m.Options)
	add(m.SuperOptions)
	return strings.Join(append(first, rest...), ",")
}

// fillDevice names the block device major:minor and the whole disks under it,
// with their scheduler and rotational flag.
func fillDevice(s *model.Storage, procRoot, sysRoot string, major, minor uint32) error {
	name, err := blockName(sysRoot, fmt.Sprintf("%d:%d", major, minor))
	if err != nil {
		return err
	}
	s.Device = name
	bd, err := blockdevice.NewFS(procRoot, sysRoot)
	if err != nil {
		return fmt.Errorf("block device %s: %w", s.Device, err)
	}
	s.Disks = wholeDisks(bd, sysRoot, s.Device, map[string]bool{})
	sort.Strings(s.Disks)

	var scheds []string
	for _, d := range s.Disks {
		sched := readScheduler(filepath.Join(sysRoot, "block", d, "queue/scheduler"))
		if sched != "" {
			scheds = append(scheds, d+"="+sched)
		}
		if rot, err := bd.SysBlockDeviceRotational(d); err == nil {
			r := rot == 1
			if s.Rotational == nil || r {
				s.Rotational = &r
			}
		}
	}
	s.Scheduler = joinSchedulers(scheds)
	return nil
}

// wholeDisks resolves a block device to the disks that hold it: a partition
// to its parent disk, a device-mapper or md device to its slaves, recursively.
func wholeDisks(bd blockdevice.FS, sysRoot, name string, seen map[string]bool) []string {
	if seen[name] {
		return nil
	}
	seen[name] = true
	dir, err := filepath.EvalSymlinks(filepath.Join(sysRoot, "class/block", name))
	if err != nil {
		return []string{name}
	}
	if _, err := os.Stat(filepath.Join(dir, "partition")); err == nil {
		return wholeDisks(bd, sysRoot, filepath.Base(filepath.Dir(dir)), seen)
	}
	under, err := bd.SysBlockDeviceUnderlyingDevices(name)
	if err != nil || len(under.DeviceNames) == 0 {
		return []string{name}
	}
	var disks []string
	for _, slave := range under.DeviceNames {
		for _, d := range wholeDisks(bd, sysRoot, slave, seen) {
			if !slices.Contains(disks, d) {
				disks = append(disks, d)
			}
		}
	}
	return disks
}

// readScheduler returns the active I/O scheduler, the bracketed entry of
// queue/scheduler ("none [mq-deadline] kyber bfq" -> "mq-deadline").
func readScheduler(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	fields := strings.Fields(string(b))
	for _, f := range fields {
		if strings.HasPrefix(f, "[") && strings.HasSuffix(f, "]") {
			return strings.Trim(f, "[]")
		}
	}
	if len(fields) == 1 {
		return fields[0]
	}
	return ""
}

// joinSchedulers gives one name when every disk uses the same scheduler and
// disk=scheduler pairs otherwise.
func joinSchedulers(pairs []string) string {
	if len(pairs) == 0 {
		return ""
	}
	_, first, _ := strings.Cut(pairs[0], "=")
	for _, p := range pairs[1:] {
		if _, s, _ := strings.Cut(p, "="); s != first {
			return strings.Join(pairs, " ")
		}
	}
	return first
}

// DeviceMounts maps each block device ("major:minor", as /proc/PID/mountinfo
// writes it) to where the root of its filesystem is mounted. A device
// mounted only below its root (a bind mount of a subdirectory) maps to "":
// paths from its filesystem's root have no place in the tree then.
func DeviceMounts() map[string]string {
	out := map[string]string{}
	fs, err := procfs.NewFS("/proc")
	if err != nil {
		return out
	}
	mounts, err := fs.GetMounts()
	if err != nil {
		return out
	}
	for _, m := range mounts {
		dev := m.MajorMinorVer
		if UnescapeMountinfo(m.Root) != "/" {
			if _, ok := out[dev]; !ok {
				out[dev] = ""
			}
			continue
		}
		if out[dev] == "" {
			out[dev] = UnescapeMountinfo(m.MountPoint)
		}
	}
	return out
}

// DevString formats a kernel dev_t as the kernel keeps it inside
// (major << 20 | minor, not the user-space encoding) as "major:minor".
func DevString(dev uint32) string {
	return fmt.Sprintf("%d:%d", dev>>20, dev&0xfffff)
}

// BlockName is the kernel's name ("vda", "nvme0n1p2") of the block device
// dev ("major:minor"), or "" if /sys does not know it.
func BlockName(dev string) string {
	name, _ := blockName("/sys", dev)
	return name
}

func blockName(sysRoot, dev string) (string, error) {
	devDir, err := filepath.EvalSymlinks(filepath.Join(sysRoot, "dev/block", dev))
	if err != nil {
		return "", fmt.Errorf("block device %s: %w", dev, err)
	}
	return filepath.Base(devDir), nil
}
