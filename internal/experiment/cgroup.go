package experiment

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/proctree"
	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
)

// A condition that limits the workload through a cgroup (cpu-quota) puts
// the workload's process tree in a cgroup of its own, made for the run
// and removed after it: the kernel enforces the limit and nothing runs
// beside the workload, so the condition costs no CPU, unlike
// cpu-contention's busy threads or io-pressure's writer.
//
// cgroup v2 (a cgroup2 mount with the controller available) is used when
// it is there; otherwise the v1 hierarchy of the controller (this
// machine's kernel mounts v1 for cpu, blkio and memory). Each has its own
// file for the limit, named in the condition's settings.

// cgroupLimit is one limit: the controller it needs and, per version, the
// files to write (in order) with their values.
type cgroupLimit struct {
	v2Controller string // as in cgroup.controllers: "cpu", "io", "memory"
	v1Controller string // as in /proc/self/cgroup: "cpu", "blkio", "memory"
	v2           [][2]string
	v1           [][2]string
}

// cgroupPlace is where a condition's cgroups are made: a directory of a
// hierarchy that has the controller, and the version.
type cgroupPlace struct {
	parent  string // the directory the condition's cgroup is made in
	version int    // 1 or 2
	// origin is where perfsleuth's own process is in that hierarchy:
	// processes left in the condition's cgroup are moved back there.
	origin string
}

// cgroupPrefix names every cgroup perfsleuth makes, with its pid, so that
// one left by a perfsleuth that was killed can be recognised and removed.
const cgroupPrefix = "perfsleuth-"

// findCgroupPlace finds where a cgroup with the limit's controller can be
// made for the workload:
//   - v2: beside perfsleuth's own cgroup, in its parent, which must have
//     the controller in cgroup.subtree_control (a cgroup with processes
//     of its own cannot give controllers to children: v2's rule of no
//     internal processes);
//   - v1: below perfsleuth's own cgroup of the controller's hierarchy.
func findCgroupPlace(l cgroupLimit) (cgroupPlace, error) {
	self, err := procfs.Self()
	if err != nil {
		return cgroupPlace{}, err
	}
	mounts, err := self.MountInfo()
	if err != nil {
		return cgroupPlace{}, fmt.Errorf("read the mounts: %w", err)
	}
	groups, err := self.Cgroups()
	if err != nil {
		return cgroupPlace{}, fmt.Errorf("read perfsleuth's cgroups: %w", err)
	}
	var why []string
	for _, m := range mounts {
		if m.FSType != "cgroup2" {
			continue
		}
		have := strings.Fields(sysinfo.ReadString(filepath.Join(m.MountPoint, "cgroup.controllers")))
		if !slices.Contains(have, l.v2Controller) {
			why = append(why, fmt.Sprintf("the cgroup2 file system at %s does not offer the %s controller (it has: %s)", m.MountPoint, l.v2Controller, strings.Join(have, " ")))
			continue
		}
		for _, g := range groups {
			if g.HierarchyID != 0 {
				continue
			}
			own := inMount(m, g.Path)
			parent := filepath.Dir(own)
			if own == m.MountPoint {
				parent = own
			}
			sub := strings.Fields(sysinfo.ReadString(filepath.Join(parent, "cgroup.subtree_control")))
			if !slices.Contains(sub, l.v2Controller) {
				why = append(why, fmt.Sprintf("%s does not give the %s controller to its children (cgroup.subtree_control: %q)", parent, l.v2Controller, strings.Join(sub, " ")))
				continue
			}
			return cgroupPlace{parent: parent, version: 2, origin: own}, nil
		}
	}
	for _, m := range mounts {
		if _, has := m.SuperOptions[l.v1Controller]; m.FSType != "cgroup" || !has {
			continue
		}
		for _, g := range groups {
			if !slices.Contains(g.Controllers, l.v1Controller) {
				continue
			}
			own := inMount(m, g.Path)
			if err := unix.Access(own, unix.W_OK); err != nil {
				why = append(why, fmt.Sprintf("cannot make a cgroup in %s (%v): run as root", own, err))
				continue
			}
			return cgroupPlace{parent: own, version: 1, origin: own}, nil
		}
	}
	if len(why) == 0 {
		why = append(why, fmt.Sprintf("no cgroup hierarchy here has the %s controller (neither cgroup2 nor a v1 mount of %s)", l.v2Controller, l.v1Controller))
	}
	return cgroupPlace{}, errors.New(strings.Join(why, "; "))
}

// inMount is the directory of cgroup path in mount m: a container's mount
// shows the hierarchy from its own cgroup (m.Root), which
// /proc/self/cgroup's paths still start with.
func inMount(m *procfs.MountInfo, path string) string {
	if rel, ok := strings.CutPrefix(path, m.Root); ok && m.Root != "/" {
		path = rel
	}
	return filepath.Join(m.MountPoint, path)
}

// cgroupRun is a cgroup made for one run.
type cgroupRun struct {
	place cgroupPlace
	dir   string
}

// makeCgroup makes the run's cgroup and writes the limit; the cgroup is
// removed again when a write fails.
func makeCgroup(p cgroupPlace, l cgroupLimit) (*cgroupRun, error) {
	removeStaleCgroups(p.parent)
	dir, err := os.MkdirTemp(p.parent, fmt.Sprintf("%s%d-", cgroupPrefix, os.Getpid()))
	if err != nil {
		return nil, fmt.Errorf("make a cgroup in %s: %w", p.parent, err)
	}
	c := &cgroupRun{place: p, dir: dir}
	files := l.v2
	if p.version == 1 {
		files = l.v1
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f[0]), []byte(f[1]), 0); err != nil {
			c.remove()
			return nil, fmt.Errorf("write %s to %s: %w", f[1], filepath.Join(dir, f[0]), err)
		}
	}
	return c, nil
}

// enter moves the process trees under pids into the cgroup (every
// process; cgroup.procs moves all of a process's threads, and what they
// start later is born inside).
func (c *cgroupRun) enter(pids []int) error {
	below, _ := proctree.Below("/proc", pids)
	for _, p := range append(slices.Clone(pids), below...) {
		if err := writeProc(c.dir, p); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("move pid %d into %s: %w", p, c.dir, err)
		}
	}
	return nil
}

// remove removes the cgroup. Its processes have normally ended with the
// run; any left (a daemon the workload started) are moved back to
// perfsleuth's own cgroup first. It tries for up to a second: a process
// that has just exited leaves the cgroup a moment later.
func (c *cgroupRun) remove() error {
	var err error
	for try := 0; try < 20; try++ {
		if err = unix.Rmdir(c.dir); err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		for _, p := range proctree.InCgroup(c.dir) {
			writeProc(c.place.origin, p)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("remove the cgroup %s: %w", c.dir, err)
}

// removeStaleCgroups removes cgroups that a perfsleuth which no longer runs
// made in parent (killed before it could remove them) and that are empty.
func removeStaleCgroups(parent string) {
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range ents {
		name, ok := strings.CutPrefix(e.Name(), cgroupPrefix)
		if !e.IsDir() || !ok {
			continue
		}
		pidText, _, _ := strings.Cut(name, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid == os.Getpid() || unix.Kill(pid, 0) == nil {
			continue
		}
		unix.Rmdir(filepath.Join(parent, e.Name()))
	}
}

func writeProc(dir string, pid int) error {
	return os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
}

// cpuQuota is cpu-quota's limit: share of the workload's CPUs' time per
// period of 100 ms.
func cpuQuota(cpus int, share float64) cgroupLimit {
	const period = 100000 // µs
	quota := int(float64(cpus*period) * share)
	return cgroupLimit{
		v2Controller: "cpu", v1Controller: "cpu",
		v2: [][2]string{{"cpu.max", fmt.Sprintf("%d %d", quota, period)}},
		v1: [][2]string{{"cpu.cfs_period_us", strconv.Itoa(period)}, {"cpu.cfs_quota_us", strconv.Itoa(quota)}},
	}
}

// ioThrottle is io-throttle's limit: the workload's reads and its writes
// of each device (nums, "MAJ:MIN") held to rate bytes/s each and, when
// iops > 0, to iops requests a second each.
func ioThrottle(nums []string, rate, iops int64) cgroupLimit {
	l := cgroupLimit{v2Controller: "io", v1Controller: "blkio"}
	for _, n := range nums {
		v2 := fmt.Sprintf("%s rbps=%d wbps=%d", n, rate, rate)
		if iops > 0 {
			v2 += fmt.Sprintf(" riops=%d wiops=%d", iops, iops)
		}
		l.v2 = append(l.v2, [2]string{"io.max", v2})
		l.v1 = append(l.v1, [2]string{"blkio.throttle.read_bps_device", fmt.Sprintf("%s %d", n, rate)},
			[2]string{"blkio.throttle.write_bps_device", fmt.Sprintf("%s %d", n, rate)})
		if iops > 0 {
			l.v1 = append(l.v1, [2]string{"blkio.throttle.read_iops_device", fmt.Sprintf("%s %d", n, iops)},
				[2]string{"blkio.throttle.write_iops_device", fmt.Sprintf("%s %d", n, iops)})
		}
	}
	return l
}

// throttleDevices are the block devices a throttle of the workload's IO
// goes on, by name and number: the device under its file system or, for a
// partition, its disk (the kernel throttles disks and dm devices, not
// partitions). sys is /sys/class/block.
func throttleDevices(st *model.Storage, sys string) (names, nums []string, err error) {
	if st == nil || st.Device == "" {
		return nil, nil, errors.New("the block device under the workload's directory is not known (not a local block device: tmpfs or a network file system?)")
	}
	names = []string{st.Device}
	if _, err := os.Stat(filepath.Join(sys, st.Device, "partition")); err == nil {
		names = st.Disks
	}
	for _, n := range names {
		num := sysinfo.ReadString(filepath.Join(sys, n, "dev"))
		if num == "" {
			return nil, nil, fmt.Errorf("%s has no device number in %s", n, sys)
		}
		nums = append(nums, num)
	}
	if len(nums) == 0 {
		return nil, nil, fmt.Errorf("no disk found under the partition %s", st.Device)
	}
	return names, nums, nil
}

// limitWords say which mechanism a limit used, for the condition's
// settings.
func limitWords(p cgroupPlace, l cgroupLimit) string {
	files := l.v2
	how := "cgroup v2"
	if p.version == 1 {
		files, how = l.v1, "cgroup v1 ("+l.v1Controller+" controller)"
	}
	var w []string
	for _, f := range files {
		w = append(w, f[0]+" = "+f[1])
	}
	return fmt.Sprintf("%s, a cgroup made for each run in %s and removed after it: %s", how, p.parent, strings.Join(w, ", "))
}
