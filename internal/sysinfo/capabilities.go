package sysinfo

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/prometheus/procfs"
)

// Check is one line of `perfsleuth doctor`: a kernel feature or permission
// perfsleuth can use, what was found, and what to do when it is not "ok".
type Check struct {
	Name string `json:"name"`
	// Status is StatusOK, StatusMissing or StatusDegraded.
	Status string `json:"status"`
	Detail string `json:"detail"`
	// Fix says what to do; empty when nothing needs doing.
	Fix string `json:"fix,omitempty"`
}

// Check statuses.
const (
	StatusOK       = "ok"
	StatusMissing  = "missing"
	StatusDegraded = "degraded"
)

// Linux capability bits (include/uapi/linux/capability.h).
const (
	capSysAdmin    = 21
	capSysResource = 24
	capPerfmon     = 38
	capBPF         = 39
)

// Capabilities probes every kernel feature perfsleuth may use. Each check
// tries the real thing (loads a program, opens a perf event, opens a file for
// writing) instead of inferring from the kernel version. It takes a fraction
// of a second (kernel BTF is parsed once) and changes nothing on the system.
func Capabilities() []Check {
	priv := readPrivileges()
	checks := []Check{priv.check()}
	checks = append(checks, bpfChecks(priv)...)
	checks = append(checks,
		checkHardwarePMU(),
		checkCPUClock(),
		checkPerfParanoid(priv),
		checkDelayAccounting(),
		checkPSI(),
		checkCgroup2(),
		checkDropCaches(),
		checkMemlock(priv),
	)
	return checks
}

// privileges is who we run as.
type privileges struct {
	euid   int
	capEff uint64
	err    error
}

func readPrivileges() privileges {
	p := privileges{euid: os.Geteuid()}
	self, err := procfs.Self()
	if err == nil {
		var st procfs.ProcStatus
		if st, err = self.NewStatus(); err == nil {
			p.capEff = st.CapEff
		}
	}
	p.err = err
	return p
}

func (p privileges) has(bit uint) bool { return p.capEff&(1<<bit) != 0 }

// canBPF says whether loading tracing programs is allowed: CAP_BPF with
// CAP_PERFMON (5.8+), or CAP_SYS_ADMIN.
func (p privileges) canBPF() bool {
	return p.has(capSysAdmin) || (p.has(capBPF) && p.has(capPerfmon))
}

func (p privileges) perfmon() bool { return p.has(capSysAdmin) || p.has(capPerfmon) }

func (p privileges) check() Check {
	c := Check{Name: "privileges"}
	if p.err != nil {
		c.Status = StatusMissing
		c.Detail = fmt.Sprintf("cannot read CapEff from /proc/self/status: %v", p.err)
		c.Fix = "run as root (sudo) for eBPF"
		return c
	}
	var have, lack []string
	for _, cp := range []struct {
		bit  uint
		name string
	}{{capBPF, "CAP_BPF"}, {capPerfmon, "CAP_PERFMON"}, {capSysAdmin, "CAP_SYS_ADMIN"}} {
		if p.has(cp.bit) {
			have = append(have, cp.name)
		} else {
			lack = append(lack, cp.name)
		}
	}
	who := fmt.Sprintf("uid %d", p.euid)
	if p.euid == 0 {
		who = "root (uid 0)"
	}
	switch {
	case p.canBPF():
		c.Status = StatusOK
		c.Detail = fmt.Sprintf("%s; CapEff has %s", who, strings.Join(have, ", "))
	default:
		c.Status = StatusMissing
		c.Detail = fmt.Sprintf("%s; CapEff lacks %s: eBPF probes are off and perfsleuth samples /proc instead", who, strings.Join(lack, ", "))
		c.Fix = "run as root (sudo) for eBPF, or grant CAP_BPF and CAP_PERFMON (setcap cap_bpf,cap_perfmon+ep on the binary)"
	}
	return c
}

// perfEventAttrSize is PERF_ATTR_SIZE for the struct x/sys knows.
const perfEventAttrSize = uint32(unsafe.Sizeof(unix.PerfEventAttr{}))

func perfOpen(typ uint32, config uint64, pid, cpu int) error {
	attr := unix.PerfEventAttr{
		Type:   typ,
		Config: config,
		Size:   perfEventAttrSize,
		Bits:   unix.PerfBitDisabled,
	}
	fd, err := unix.PerfEventOpen(&attr, pid, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

func checkHardwarePMU() Check {
	c := Check{Name: "perf_hardware_counters"}
	err := perfOpen(unix.PERF_TYPE_HARDWARE, unix.PERF_COUNT_HW_CPU_CYCLES, 0, -1)
	if err == nil {
		c.Status = StatusOK
		c.Detail = "perf_event_open(cycles) works on this process"
		return c
	}
	c.Status = StatusMissing
	c.Detail = fmt.Sprintf("perf_event_open(cycles): %v (usual in VMs without a virtual PMU); perfsleuth uses software clocks (cpu-clock) instead, so no cycles or IPC", err)
	c.Fix = "none needed; on a VM, enabling the virtual PMU (e.g. KVM -cpu host,pmu=on) adds cycle counts"
	return c
}

func checkCPUClock() Check {
	c := Check{Name: "perf_cpu_clock"}
	// Sampling every CPU (pid -1, one event per CPU) is what on-CPU
	// profiling needs; pid 0 only covers this process.
	errAll := perfOpen(unix.PERF_TYPE_SOFTWARE, unix.PERF_COUNT_SW_CPU_CLOCK, -1, 0)
	if errAll == nil {
		c.Status = StatusOK
		c.Detail = "software cpu-clock events open system-wide (pid -1, cpu 0)"
		return c
	}
	errSelf := perfOpen(unix.PERF_TYPE_SOFTWARE, unix.PERF_COUNT_SW_CPU_CLOCK, 0, -1)
	if errSelf == nil {
		c.Status = StatusDegraded
		c.Detail = fmt.Sprintf("cpu-clock works for this process only; system-wide: %v", errAll)
		c.Fix = "run as root (sudo) or lower kernel.perf_event_paranoid to 0 for system-wide CPU sampling"
		return c
	}
	c.Status = StatusMissing
	c.Detail = fmt.Sprintf("perf_event_open(cpu-clock): %v", errSelf)
	c.Fix = "run as root (sudo); check that the kernel has CONFIG_PERF_EVENTS"
	return c
}

func checkPerfParanoid(p privileges) Check {
	c := Check{Name: "perf_event_paranoid"}
	s := ReadString("/proc/sys/kernel/perf_event_paranoid")
	v, err := strconv.Atoi(s)
	if err != nil {
		c.Status = StatusMissing
		c.Detail = "cannot read /proc/sys/kernel/perf_event_paranoid: perf events are probably not built in"
		c.Fix = "use a kernel with CONFIG_PERF_EVENTS"
		return c
	}
	switch {
	case p.perfmon():
		c.Status = StatusOK
		c.Detail = fmt.Sprintf("%d; CAP_PERFMON/CAP_SYS_ADMIN bypasses it", v)
	case v <= 0:
		c.Status = StatusOK
		c.Detail = fmt.Sprintf("%d: unprivileged system-wide profiling allowed", v)
	default:
		c.Status = StatusDegraded
		c.Detail = fmt.Sprintf("%d: without root, only this process's own events can be opened", v)
		c.Fix = "run as root (sudo), or sysctl -w kernel.perf_event_paranoid=0"
	}
	return c
}

// delayProbeTime bounds the delay-accounting probe: long enough for a few
// hundred fdatasyncs of ~0.4 ms (measured-here.md) to add a 10 ms tick.
const delayProbeTime = 300 * time.Millisecond

func checkDelayAccounting() Check {
	c := Check{Name: "delay_accounting"}
	s := ReadString("/proc/sys/kernel/task_delayacct")
	switch s {
	case "":
		c.Status = StatusMissing
		c.Detail = "no /proc/sys/kernel/task_delayacct: kernel built without CONFIG_TASK_DELAY_ACCT; /proc/PID/stat field 42 (block-IO delay) stays 0"
		c.Fix = "use a kernel with CONFIG_TASK_DELAY_ACCT to see per-thread block-IO wait without eBPF"
		return c
	case "0":
		c.Status = StatusMissing
		c.Detail = "kernel.task_delayacct=0: /proc/PID/stat field 42 (delayacct_blkio_ticks) stays 0, so /proc cannot show time blocked on disk"
		c.Fix = "sudo sysctl -w kernel.task_delayacct=1 (or boot with delayacct)"
		return c
	}
	moved, err := blkioTicksMove(delayProbeTime)
	switch {
	case err != nil:
		c.Status = StatusDegraded
		c.Detail = fmt.Sprintf("kernel.task_delayacct=%s, but probing field 42 failed: %v", s, err)
		c.Fix = "make /var/tmp writable so doctor can check that block-IO delay is counted"
	case moved > 0:
		c.Status = StatusOK
		c.Detail = fmt.Sprintf("kernel.task_delayacct=%s; /proc/PID/stat field 42 moved by %d ticks during fdatasync", s, moved)
	default:
		c.Status = StatusDegraded
		c.Detail = fmt.Sprintf("kernel.task_delayacct=%s, but field 42 did not move during %v of fdatasync (temp dir on tmpfs, or a very fast disk); block-IO delay may read 0", s, delayProbeTime)
		c.Fix = "none needed if /var/tmp is on tmpfs; otherwise boot with delayacct"
	}
	return c
}

// blkioTicksMove writes and fdatasyncs a small temp file until this thread's
// delayacct_blkio_ticks moves or d passes, and returns how far it moved.
func blkioTicksMove(d time.Duration) (uint64, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dir := "/var/tmp"
	if _, err := os.Stat(dir); err != nil {
		dir = os.TempDir()
	}
	f, err := os.CreateTemp(dir, "perfsleuth-doctor-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	before, err := threadBlkioTicks()
	if err != nil {
		return 0, err
	}
	buf := make([]byte, 4096)
	deadline := time.Now().Add(d)
	for i := 0; time.Now().Before(deadline); i++ {
		buf[0] = byte(i)
		if _, err := f.WriteAt(buf, int64(i%256)*4096); err != nil {
			return 0, err
		}
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			return 0, err
		}
		if i%16 == 15 {
			now, err := threadBlkioTicks()
			if err != nil {
				return 0, err
			}
			if now > before {
				return now - before, nil
			}
		}
	}
	now, err := threadBlkioTicks()
	if err != nil || now < before {
		return 0, err
	}
	return now - before, nil
}

// threadBlkioTicks reads field 42 of /proc/thread-self/stat: the kernel
// reports it per task, not per process.
func threadBlkioTicks() (uint64, error) {
	b, err := os.ReadFile("/proc/thread-self/stat")
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("unexpected /proc/thread-self/stat format")
	}
	fields := strings.Fields(string(b[i+1:]))
	// fields[0] is field 3 (state); field 42 is fields[39].
	if len(fields) < 40 {
		return 0, errors.New("/proc/thread-self/stat has no field 42")
	}
	return strconv.ParseUint(fields[39], 10, 64)
}

func checkPSI() Check {
	c := Check{Name: "psi_io"}
	fs, err := procfs.NewDefaultFS()
	var psi procfs.PSIStats
	if err == nil {
		psi, err = fs.PSIStatsForResource("io")
	}
	if err != nil || psi.Some == nil {
		c.Status = StatusMissing
		c.Detail = fmt.Sprintf("/proc/pressure/io unreadable: %v", err)
		c.Fix = "boot with psi=1 (kernel needs CONFIG_PSI) to see IO pressure without eBPF"
		return c
	}
	c.Status = StatusOK
	c.Detail = fmt.Sprintf("/proc/pressure/io: some avg10=%.2f", psi.Some.Avg10)
	if psi.Full != nil {
		c.Detail += fmt.Sprintf(", full avg10=%.2f", psi.Full.Avg10)
	}
	return c
}

// cgroupControllers are what the experiments use: cpuset and cpu to give the
// workload fewer cores, io to limit the disk, memory for cold-cache runs.
var cgroupControllers = []string{"cpuset", "cpu", "io", "memory"}

func checkCgroup2() Check {
	c := Check{Name: "cgroup_v2"}
	mounts, err := procfs.GetMounts()
	if err != nil {
		c.Status = StatusMissing
		c.Detail = fmt.Sprintf("cannot read /proc/self/mountinfo: %v", err)
		c.Fix = "mount /proc"
		return c
	}
	var at string
	v1 := false
	for _, m := range mounts {
		switch m.FSType {
		case "cgroup2":
			if at == "" {
				at = UnescapeMountinfo(m.MountPoint)
			}
		case "cgroup":
			v1 = true
		}
	}
	if at == "" {
		c.Status = StatusMissing
		c.Detail = "no cgroup2 file system is mounted"
		c.Fix = "mount -t cgroup2 none /sys/fs/cgroup (or boot with systemd.unified_cgroup_hierarchy=1) so experiments can limit CPUs and IO"
		return c
	}
	have := strings.Fields(ReadString(filepath.Join(at, "cgroup.controllers")))
	var lack []string
	for _, want := range cgroupControllers {
		if !slices.Contains(have, want) {
			lack = append(lack, want)
		}
	}
	where := "cgroup2 at " + at
	if v1 {
		where += " (hybrid: cgroup v1 hierarchies are mounted too)"
	}
	list := strings.Join(have, " ")
	if list == "" {
		list = "none"
	}
	if len(lack) == 0 {
		c.Status = StatusOK
		c.Detail = fmt.Sprintf("%s; controllers: %s", where, list)
		return c
	}
	c.Status = StatusDegraded
	c.Detail = fmt.Sprintf("%s; controllers: %s; missing %s", where, list, strings.Join(lack, ", "))
	if v1 {
		c.Detail += " (a controller bound to a v1 hierarchy is not available in v2)"
	}
	c.Fix = "boot with systemd.unified_cgroup_hierarchy=1 (or cgroup_no_v1=all) so experiments can limit CPUs and IO through cgroup v2"
	return c
}

func checkDropCaches() Check {
	c := Check{Name: "drop_caches"}
	// Opening for writing checks the permission without dropping anything.
	f, err := os.OpenFile("/proc/sys/vm/drop_caches", os.O_WRONLY, 0)
	if err != nil {
		c.Status = StatusMissing
		c.Detail = fmt.Sprintf("/proc/sys/vm/drop_caches is not writable: %v; cold-cache experiments cannot run", err)
		c.Fix = "run as root (sudo) for cold-cache runs"
		return c
	}
	f.Close()
	c.Status = StatusOK
	c.Detail = "/proc/sys/vm/drop_caches is writable: cold-cache runs possible"
	return c
}
