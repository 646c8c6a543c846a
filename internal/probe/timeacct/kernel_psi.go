package timeacct

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/proctree"
	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
)

// The pressure (PSI) of the workload's cgroup, when the cgroup holds the
// workload and nothing else: its cpu.pressure and io.pressure "some"
// totals (µs) over the window, beside the accounting's cpu-wait and
// storage waits.
//
// perfsleuth does not put a workload in a cgroup of its own: a command or
// benchmark it starts shares perfsleuth's cgroup, and only a process
// observed by -p may have one (a systemd service's). So PSI is compared
// for those, and a note says when it is not.
//
// "some" is the time at least one task of the group stalled, but a
// group's total is not the union of its tasks' stalls: the kernel
// averages each CPU's stall time weighted by that CPU's non-idle time for
// the group (kernel/sched/psi.c, collect_percpu_times). One thread doing
// O_DIRECT reads on this 2-CPU machine slept 84 ms by delay accounting
// where its cgroup's io some grew 43 ms; pinned to one CPU, io some read
// 105 ms where the thread slept 106 ms. So PSI is judged only when all the
// workload's threads may run on one CPU alone, and one thread has nearly
// all the time of the kind compared (psiDominant), so that the union of
// stalls is its own time; otherwise it is shown.
const psiDominant = 0.99

// workloadCgroup is the cgroup (v2) the workload has to itself.
type workloadCgroup struct {
	path  string // as /proc/PID/cgroup names it: "/system.slice/pg.service"
	dir   string // its directory under the cgroup2 mount
	roots []int
}

// psiReading is the cgroup's pressure, and where the workload may run.
type psiReading struct {
	cpuSomeUs, ioSomeUs uint64
	ok                  bool
	// cpus is the CPU list every thread of the workload may run on
	// (Cpus_allowed_list), "" when they differ.
	cpus string
	// others names a process in the cgroup that is not the workload's
	// (one that joined it since the start), "" when none.
	others string
}

// ownCgroup returns the cgroup that holds the workload below roots and
// nothing else, or nil and why there is none.
func ownCgroup(procRoot string, roots []int) (*workloadCgroup, string) {
	mount := cgroup2Mount(filepath.Join(procRoot, "self/mountinfo"))
	if mount == "" {
		return nil, "no cgroup2 hierarchy is mounted: PSI is not compared"
	}
	pids := workloadPids(procRoot, roots)
	var path string
	for _, pid := range pids {
		p := cgroupOf(filepath.Join(procRoot, strconv.Itoa(pid), "cgroup"))
		if p == "" {
			continue
		}
		if path == "" || strings.HasPrefix(path, p+"/") {
			path = p // the highest of the workload's cgroups
		}
	}
	switch {
	case path == "":
		return nil, "the workload's cgroup could not be read: PSI is not compared"
	case path == "/":
		return nil, "the workload has no cgroup of its own (it is in the root cgroup): PSI is not compared"
	}
	cg := &workloadCgroup{path: path, dir: filepath.Join(mount, path), roots: roots}
	if other := cg.stranger(procRoot, pids); other != "" {
		return nil, fmt.Sprintf("the workload has no cgroup of its own (%s also holds %s; a command perfsleuth starts shares perfsleuth's): PSI is not compared", path, other)
	}
	return cg, ""
}

// stranger names a process in the cgroup or below it that is not one of
// pids, "" when there is none.
func (cg *workloadCgroup) stranger(procRoot string, pids []int) string {
	found := ""
	filepath.WalkDir(cg.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || found != "" || d.Name() != "cgroup.procs" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		for _, f := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(f)
			if err == nil && !slices.Contains(pids, pid) {
				comm, _ := os.ReadFile(filepath.Join(procRoot, f, "comm"))
				found = fmt.Sprintf("pid %d (%s)", pid, strings.TrimSpace(string(comm)))
				return fs.SkipAll
			}
		}
		return nil
	})
	return found
}

// read reads the cgroup's pressure and the workload's CPU affinity.
func (cg *workloadCgroup) read() *psiReading {
	r := &psiReading{}
	cpu, ok1 := psiSomeTotal(filepath.Join(cg.dir, "cpu.pressure"))
	io, ok2 := psiSomeTotal(filepath.Join(cg.dir, "io.pressure"))
	r.cpuSomeUs, r.ioSomeUs, r.ok = cpu, io, ok1 && ok2
	pids := workloadPids("/proc", cg.roots)
	r.others = cg.stranger("/proc", pids)
	r.cpus = affinity("/proc", pids)
	return r
}

// workloadPids are roots and every process below them, each once.
func workloadPids(procRoot string, roots []int) []int {
	below, _ := proctree.Below(procRoot, roots)
	return append(slices.Compact(slices.Sorted(slices.Values(roots))), below...)
}

// affinity is the Cpus_allowed_list all the threads of pids share, ""
// when they do not share one.
func affinity(procRoot string, pids []int) string {
	cpus := ""
	for _, pid := range pids {
		dir := filepath.Join(procRoot, strconv.Itoa(pid), "task")
		tasks, _ := os.ReadDir(dir)
		for _, t := range tasks {
			c := statusField(filepath.Join(dir, t.Name(), "status"), "Cpus_allowed_list")
			if c == "" {
				continue
			}
			if cpus != "" && c != cpus {
				return ""
			}
			cpus = c
		}
	}
	return cpus
}

// statusField reads one "Name:\tvalue" line of a /proc status file.
func statusField(path, name string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// oneCPU says whether a CPU list names a single CPU ("3", not "0-1" or "0,2").
func oneCPU(list string) bool {
	_, err := strconv.Atoi(list)
	return err == nil
}

// cgroup2Mount is where the cgroup2 hierarchy is mounted, from a
// mountinfo file ("" when it is not): /sys/fs/cgroup, or
// /sys/fs/cgroup/unified beside v1 hierarchies.
func cgroup2Mount(mountinfo string) string {
	b, err := os.ReadFile(mountinfo)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		if f := strings.Fields(post); len(f) > 0 && f[0] == "cgroup2" {
			if g := strings.Fields(pre); len(g) >= 5 {
				return sysinfo.UnescapeMountinfo(g[4])
			}
		}
	}
	return ""
}

// cgroupOf is the cgroup2 path of a /proc/PID/cgroup file (its "0::"
// line), "" when it has none.
func cgroupOf(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p
		}
	}
	return ""
}

// psiSomeTotal reads the "some" line's total (µs) of a pressure file.
func psiSomeTotal(path string) (uint64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	return parsePSISome(string(b))
}

// parsePSISome takes total= of the "some" line of a pressure file:
// "some avg10=0.00 avg60=0.00 avg300=0.00 total=123".
func parsePSISome(s string) (uint64, bool) {
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "some" {
			continue
		}
		for _, kv := range f[1:] {
			if v, ok := strings.CutPrefix(kv, "total="); ok {
				n, err := strconv.ParseUint(v, 10, 64)
				return n, err == nil
			}
		}
	}
	return 0, false
}

// psiChecks sets the cgroup's pressure beside the accounting. comparable
// are the threads whose storage waits matched their block-IO sleeps one
// to one (kernel_delay.go): only their storage waits are what io some
// counts.
func psiChecks(ta *model.TimeAccounting, start, end *kernelSnapshot, comparable map[int]bool) ([]model.KernelCheck, []string, string) {
	if start.psiNote != "" {
		return nil, []string{start.psiNote}, ""
	}
	a, b := start.psi, end.psi
	if a == nil || b == nil || !a.ok || !b.ok || b.cpuSomeUs < a.cpuSomeUs || b.ioSomeUs < a.ioSomeUs {
		return nil, []string{"the pressure of the workload's cgroup could not be read (cpu.pressure, io.pressure: a kernel without CONFIG_PSI, or booted with psi=0): PSI is not compared"}, ""
	}
	path := start.cgroup
	if b.others != "" {
		return nil, []string{fmt.Sprintf("%s held %s by the end of the window: its pressure is not the workload's alone, and is not compared", path, b.others)}, path
	}
	src := func(res string) string { return fmt.Sprintf("PSI %s some (cgroup %s)", res, path) }
	cpu := model.KernelCheck{What: "cpu-wait", Source: src("cpu"), KernelSec: float64(b.cpuSomeUs-a.cpuSomeUs) / 1e6}
	io := model.KernelCheck{What: "storage waits", Source: src("io"), KernelSec: float64(b.ioSomeUs-a.ioSomeUs) / 1e6}
	var cpuTop, ioTop float64
	ioTopTID := 0
	for _, t := range ta.Threads {
		cpu.Threads++
		io.Threads++
		w, s := t.Seconds[model.CatCPUWait], storageSec(t)
		cpu.PerfsleuthSec += w
		io.PerfsleuthSec += s
		cpuTop = max(cpuTop, w)
		if s > ioTop {
			ioTop, ioTopTID = s, t.TID
		}
	}
	one := oneCPU(a.cpus) && a.cpus == b.cpus
	cpu.Judged = one && cpuTop >= psiDominant*cpu.PerfsleuthSec
	io.Judged = one && ioTop >= psiDominant*io.PerfsleuthSec && comparable[ioTopTID]
	var notes []string
	if !one {
		notes = append(notes, "PSI is shown, not judged: the workload's threads may run on more than one CPU, and a cgroup's pressure is then an average of the CPUs' stall times weighted by their non-idle time (kernel/sched/psi.c), not the time its tasks stalled")
	} else if !cpu.Judged || !io.Judged {
		notes = append(notes, "PSI is judged only where one thread has nearly all the time compared (its some is then that thread's time) and, for io, where that thread's storage waits are its block-IO sleeps one to one")
	}
	return []model.KernelCheck{cpu, io}, notes, path
}
