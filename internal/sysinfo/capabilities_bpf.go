package sysinfo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// kernelBTF holds the kernel's BTF, decoded once per process and shared by
// every check and every collection load (probe.NewCollection): without it
// each load decodes /sys/kernel/btf/vmlinux again (seven times in one
// observe here).
var kernelBTF = btf.NewCache()

// KernelBTF is the process's cache of the kernel's BTF, for
// ebpf.CollectionOptions.Cache.
func KernelBTF() *btf.Cache { return kernelBTF }

// KernelSpec is the kernel's BTF, decoded once per process; not to be
// changed by the caller.
func KernelSpec() (*btf.Spec, error) { return kernelBTF.Kernel() }

// Places the kernel may expose tracefs; debugfs mounts it on demand under
// tracing/.
var tracefsDirs = []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}

// tracepoint is one tracepoint perfsleuth's probes attach to. Name "*" means
// any tracepoint of the group.
type tracepoint struct{ group, name string }

var neededTracepoints = []tracepoint{
	{"sched", "sched_switch"},
	{"sched", "sched_wakeup"},
	{"sched", "sched_process_fork"},
	{"sched", "sched_process_exit"},
	{"raw_syscalls", "sys_enter"},
	{"raw_syscalls", "sys_exit"},
	{"block", "block_rq_issue"},
	{"block", "block_rq_complete"},
	{"writeback", "*"},
	{"filemap", "mm_filemap_add_to_page_cache"},
}

// writebackBTFNames stand for "writeback:*" when looking in BTF, which cannot
// be listed by group. writeback_dirty_folio replaced writeback_dirty_page in 5.18.
var writebackBTFNames = []string{"writeback_dirty_folio", "writeback_dirty_page", "writeback_written", "balance_dirty_pages", "global_dirty_state"}

func (t tracepoint) String() string { return t.group + ":" + t.name }

// bpfChecks probes BTF, program types (loading and, where cheap, attaching),
// map types, iterators, tracefs and the tracepoints perfsleuth needs.
func bpfChecks(p privileges) []Check {
	spec, btfCheck := checkBTF()
	tracefs := findTracefs()
	notRoot := ""
	if !p.canBPF() {
		notRoot = " (not privileged: run as root)"
	}
	checks := []Check{btfCheck}
	checks = append(checks,
		checkClassicTracepoint(tracefs, notRoot),
		checkAttach("bpf_raw_tracepoint", "raw_tp", "raw tracepoint programs attach by name (sched_switch), no tracefs needed", notRoot, attachRawTP),
		checkAttach("bpf_tp_btf", "tp_btf", "BTF-typed tracepoint programs (tp_btf/sched_switch) load and attach; no tracefs needed", notRoot, attachTPBTF),
		checkProgType("bpf_perf_event", ebpf.PerfEvent, "perf_event programs load (CPU sampling on cpu-clock events)", notRoot),
		checkKprobe(tracefs, notRoot),
		checkFentry(notRoot),
		checkMapType("bpf_ringbuf", ebpf.RingBuf, notRoot),
		checkMapType("bpf_task_storage", ebpf.TaskStorage, notRoot),
		checkMapType("bpf_percpu_array", ebpf.PerCPUArray, notRoot),
		checkAttach("bpf_iter_task", "iter/task", "BPF task iterators load and attach", notRoot, attachIterTask),
		checkTracefs(tracefs),
		checkTracepoints(tracefs, spec),
	)
	return checks
}

func checkBTF() (*btf.Spec, Check) {
	c := Check{Name: "kernel_btf"}
	fi, err := os.Stat("/sys/kernel/btf/vmlinux")
	if err != nil {
		c.Status = StatusMissing
		c.Detail = fmt.Sprintf("/sys/kernel/btf/vmlinux: %v; tp_btf programs and CO-RE need kernel BTF", err)
		c.Fix = "use a kernel built with CONFIG_DEBUG_INFO_BTF=y (most distribution kernels since 2020)"
		return nil, c
	}
	spec, err := KernelSpec()
	if err != nil {
		c.Status = StatusDegraded
		c.Detail = fmt.Sprintf("/sys/kernel/btf/vmlinux exists (%d bytes) but does not parse: %v", fi.Size(), err)
		c.Fix = "report this kernel to the perfsleuth developers"
		return nil, c
	}
	c.Status = StatusOK
	c.Detail = fmt.Sprintf("/sys/kernel/btf/vmlinux parses (%d KiB)", fi.Size()/1024)
	return spec, c
}

// findTracefs returns the first tracefs directory with an events/ tree.
func findTracefs() string {
	for _, d := range tracefsDirs {
		if fi, err := os.Stat(filepath.Join(d, "events")); err == nil && fi.IsDir() {
			return d
		}
	}
	return ""
}

// emptyProgram is "return 0", enough for the verifier and attach.
func emptyProgram() asm.Instructions {
	return asm.Instructions{asm.LoadImm(asm.R0, 0, asm.DWord), asm.Return()}
}

func loadProgram(spec *ebpf.ProgramSpec) (*ebpf.Program, error) {
	spec.Instructions = emptyProgram()
	spec.License = "GPL"
	return ebpf.NewProgramWithOptions(spec, ebpf.ProgramOptions{LogDisabled: true})
}

// checkAttach runs attach (load and attach one empty program, then close it)
// and reports ok with detail, or missing with the error.
func checkAttach(name, what, detail, notRoot string, attach func() error) Check {
	c := Check{Name: name}
	if err := attach(); err != nil {
		c.Status = StatusMissing
		c.Detail = fmt.Sprintf("%s: %v%s", what, err, notRoot)
		c.Fix = fixFor(err)
		return c
	}
	c.Status = StatusOK
	c.Detail = detail
	return c
}

func fixFor(err error) string {
	switch {
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		return "run as root (sudo) for eBPF"
	case errors.Is(err, ebpf.ErrNotSupported):
		return "needs a newer kernel (or one built with CONFIG_BPF_EVENTS)"
	}
	return "see the error; the probes that need this are skipped and perfsleuth samples /proc instead"
}

func attachRawTP() error {
	prog, err := loadProgram(&ebpf.ProgramSpec{Type: ebpf.RawTracepoint})
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	defer prog.Close()
	l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sched_switch", Program: prog})
	if err != nil {
		return fmt.Errorf("attach sched_switch: %w", err)
	}
	return l.Close()
}

func attachTPBTF() error {
	prog, err := loadProgram(&ebpf.ProgramSpec{Type: ebpf.Tracing, AttachType: ebpf.AttachTraceRawTp, AttachTo: "sched_switch"})
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	defer prog.Close()
	l, err := link.AttachTracing(link.TracingOptions{Program: prog})
	if err != nil {
		return fmt.Errorf("attach sched_switch: %w", err)
	}
	return l.Close()
}

func attachIterTask() error {
	prog, err := loadProgram(&ebpf.ProgramSpec{Type: ebpf.Tracing, AttachType: ebpf.AttachTraceIter, AttachTo: "task"})
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	defer prog.Close()
	it, err := link.AttachIter(link.IterOptions{Program: prog})
	if err != nil {
		return fmt.Errorf("attach: %w", err)
	}
	return it.Close()
}

func checkProgType(name string, pt ebpf.ProgramType, detail, notRoot string) Check {
	c := Check{Name: name}
	if err := features.HaveProgramType(pt); err != nil {
		c.Status = StatusMissing
		c.Detail = fmt.Sprintf("%s programs: %v%s", pt, err, notRoot)
		c.Fix = fixFor(err)
		return c
	}
	c.Status = StatusOK
	c.Detail = detail
	return c
}

// checkClassicTracepoint loads a tracepoint program and attaches it, which
// needs the tracepoint's id from tracefs.
func checkClassicTracepoint(tracefs, notRoot string) Check {
	c := checkProgType("bpf_tracepoint", ebpf.TracePoint, "", notRoot)
	if c.Status != StatusOK {
		return c
	}
	prog, err := loadProgram(&ebpf.ProgramSpec{Type: ebpf.TracePoint})
	if err == nil {
		var l link.Link
		l, err = link.Tracepoint("sched", "sched_switch", prog, nil)
		if err == nil {
			l.Close()
		}
		prog.Close()
	}
	switch {
	case err == nil:
		c.Detail = fmt.Sprintf("tracepoint programs load and attach (ids from %s)", tracefs)
	case tracefs == "":
		c.Status = StatusDegraded
		c.Detail = "tracepoint programs load but cannot attach: tracefs is not mounted (ids come from tracefs); perfsleuth uses tp_btf/raw_tp, which do not need it"
		c.Fix = "none needed; mount -t tracefs nodev /sys/kernel/tracing makes classic tracepoints work too"
	default:
		c.Status = StatusDegraded
		c.Detail = fmt.Sprintf("tracepoint programs load but attaching sched:sched_switch failed: %v", err)
		c.Fix = fixFor(err)
	}
	return c
}

// checkKprobe reports kprobe programs. Loading one only proves the program
// type exists; attaching needs the kprobe PMU or tracefs kprobe_events.
func checkKprobe(tracefs, notRoot string) Check {
	const unused = "; perfsleuth does not use kprobes"
	c := checkProgType("bpf_kprobe", ebpf.Kprobe, "", notRoot)
	if c.Status != StatusOK {
		c.Detail += unused
		c.Fix = "none needed"
		return c
	}
	var via []string
	if _, err := os.Stat("/sys/bus/event_source/devices/kprobe/type"); err == nil {
		via = append(via, "kprobe PMU")
	}
	if tracefs != "" {
		if f, err := os.OpenFile(filepath.Join(tracefs, "kprobe_events"), os.O_WRONLY|os.O_APPEND, 0); err == nil {
			f.Close()
			via = append(via, tracefs+"/kprobe_events")
		}
	}
	if len(via) == 0 {
		c.Status = StatusMissing
		c.Detail = "kprobe programs load, but kprobes cannot attach: no kprobe PMU (/sys/bus/event_source/devices/kprobe) and no writable tracefs kprobe_events (kernel without CONFIG_KPROBE_EVENTS?)" + unused
		c.Fix = "none needed"
		return c
	}
	c.Detail = "kprobe programs load; attach via " + strings.Join(via, " and ") + unused
	return c
}

// checkFentry asks cilium/ebpf, whose Tracing probe loads an fentry program.
func checkFentry(notRoot string) Check {
	const unused = "; perfsleuth does not use fentry/fexit"
	c := Check{Name: "bpf_fentry"}
	if err := features.HaveProgramType(ebpf.Tracing); err != nil {
		c.Status = StatusMissing
		c.Detail = fmt.Sprintf("fentry programs: %v%s%s", err, notRoot, unused)
		c.Fix = "none needed"
		return c
	}
	c.Status = StatusOK
	c.Detail = "fentry programs load" + unused
	return c
}

func checkMapType(name string, mt ebpf.MapType, notRoot string) Check {
	c := Check{Name: name}
	if err := features.HaveMapType(mt); err != nil {
		c.Status = StatusMissing
		c.Detail = fmt.Sprintf("%s maps: %v%s", mt, err, notRoot)
		c.Fix = fixFor(err)
		return c
	}
	c.Status = StatusOK
	c.Detail = fmt.Sprintf("%s maps can be created", mt)
	return c
}

func checkTracefs(tracefs string) Check {
	c := Check{Name: "tracefs"}
	if tracefs == "" {
		c.Status = StatusDegraded
		c.Detail = fmt.Sprintf("tracefs not mounted (no events/ under %s): classic tracepoints cannot attach; tp_btf and raw_tp attach through BTF and do not need it", strings.Join(tracefsDirs, " or "))
		c.Fix = "none needed for perfsleuth; mount -t tracefs nodev /sys/kernel/tracing to use classic tracepoints"
		return c
	}
	c.Status = StatusOK
	c.Detail = "tracefs at " + tracefs
	return c
}

// checkTracepoints looks up every needed tracepoint in tracefs (classic
// tracepoints) and in kernel BTF (the btf_trace_<name> typedef that tp_btf
// and raw_tp programs attach by), and says which path works.
func checkTracepoints(tracefs string, spec *btf.Spec) Check {
	c := Check{Name: "tracepoints"}
	var inFS, inBTF, missing []string
	for _, tp := range neededTracepoints {
		fsOK := tracefs != "" && tracepointInTracefs(tracefs, tp)
		btfOK := spec != nil && tracepointInBTF(spec, tp)
		if fsOK {
			inFS = append(inFS, tp.String())
		}
		if btfOK {
			inBTF = append(inBTF, tp.String())
		}
		if !fsOK && !btfOK {
			missing = append(missing, tp.String())
		}
	}
	n := len(neededTracepoints)
	var parts []string
	switch {
	case spec == nil:
		parts = append(parts, "tp_btf/raw_tp: no kernel BTF to look in")
	default:
		parts = append(parts, fmt.Sprintf("tp_btf/raw_tp: %d of %d found in kernel BTF", len(inBTF), n))
	}
	if tracefs == "" {
		parts = append(parts, "classic: tracefs not mounted")
	} else {
		parts = append(parts, fmt.Sprintf("classic: %d of %d under %s/events", len(inFS), n, tracefs))
	}
	c.Detail = strings.Join(parts, "; ")
	if len(missing) > 0 {
		c.Status = StatusMissing
		c.Detail = "not found: " + strings.Join(missing, ", ") + "; " + c.Detail
		c.Fix = "the probes using these are skipped; a kernel with CONFIG_DEBUG_INFO_BTF or a mounted tracefs may have them"
		return c
	}
	c.Status = StatusOK
	return c
}

func tracepointInTracefs(tracefs string, tp tracepoint) bool {
	dir := filepath.Join(tracefs, "events", tp.group)
	if tp.name != "*" {
		_, err := os.Stat(filepath.Join(dir, tp.name, "id"))
		return err == nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if e.IsDir() {
			return true
		}
	}
	return false
}

func tracepointInBTF(spec *btf.Spec, tp tracepoint) bool {
	names := []string{tp.name}
	if tp.name == "*" && tp.group == "writeback" {
		names = writebackBTFNames
	}
	for _, n := range names {
		if HasBTFTracepoint(spec, n) {
			return true
		}
	}
	return false
}

// HasBTFTracepoint tells whether the kernel's BTF has tracepoint name (the
// btf_trace_<name> typedef that tp_btf and raw_tp programs attach by): a
// tp_btf program loads only against a tracepoint the kernel has.
func HasBTFTracepoint(spec *btf.Spec, name string) bool {
	var td *btf.Typedef
	return spec.TypeByName("btf_trace_"+name, &td) == nil
}

// DelayedDequeue says whether the kernel dequeues sleeping tasks late
// (DELAY_DEQUEUE, Linux 6.12+), from its BTF: struct sched_entity has a
// sched_delayed member there. Such a kernel stamps a block-IO delay's
// start on the task running the scheduler when it dequeues a sleeper late
// (__block_task), so delay accounting's block-IO figure (taskstats,
// /proc/PID/task/TID/stat field 42) is wrong in some runs: 1,396 s of
// delay in a 0.28 s run here. Read once; false when the BTF cannot be read.
var DelayedDequeue = sync.OnceValue(func() bool {
	spec, err := KernelSpec()
	if err != nil {
		return false
	}
	var se *btf.Struct
	if err := spec.TypeByName("sched_entity", &se); err != nil {
		return false
	}
	for _, m := range se.Members {
		if m.Name == "sched_delayed" {
			return true
		}
	}
	return false
})

// memlockProbeMax caps the over-limit map the memlock check creates: a soft
// limit above it is more than perfsleuth's maps need anyway.
const memlockProbeMax = 64 << 20

// checkMemlock finds out whether RLIMIT_MEMLOCK limits BPF memory by creating
// an array map just larger than the soft limit. Since 5.11 the kernel charges
// BPF memory to the memory cgroup instead, and the map loads.
func checkMemlock(p privileges) Check {
	c := Check{Name: "rlimit_memlock"}
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &lim); err != nil {
		c.Status = StatusDegraded
		c.Detail = fmt.Sprintf("getrlimit(RLIMIT_MEMLOCK): %v", err)
		c.Fix = "none needed on kernels 5.11 and later"
		return c
	}
	if lim.Cur == unix.RLIM_INFINITY {
		c.Status = StatusOK
		c.Detail = "RLIMIT_MEMLOCK is unlimited"
		return c
	}
	raise := "raising it works (CAP_SYS_RESOURCE or an unlimited hard limit)"
	if !p.has(capSysResource) && lim.Max != unix.RLIM_INFINITY {
		raise = "raising it would fail (no CAP_SYS_RESOURCE)"
	}
	cur := fmt.Sprintf("RLIMIT_MEMLOCK is %d KiB", lim.Cur/1024)
	if lim.Cur+1<<20 > memlockProbeMax {
		c.Status = StatusOK
		c.Detail = cur + ", more than perfsleuth's maps need"
		return c
	}
	const valueSize = 4096
	entries := uint32((lim.Cur + 1<<20 + valueSize - 1) / valueSize)
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: valueSize, MaxEntries: entries})
	if err == nil {
		m.Close()
		c.Status = StatusOK
		c.Detail = fmt.Sprintf("%s, yet a %d KiB BPF map was created: the kernel charges BPF memory to the memory cgroup, so the limit does not matter; %s, which is harmless", cur, entries*valueSize/1024, raise)
		return c
	}
	if !p.canBPF() {
		c.Status = StatusMissing
		c.Detail = fmt.Sprintf("%s; could not probe whether it limits BPF maps: %v", cur, err)
		c.Fix = "run as root (sudo) for eBPF"
		return c
	}
	if strings.HasPrefix(raise, "raising it works") {
		c.Status = StatusDegraded
		c.Detail = fmt.Sprintf("%s and limits BPF maps (%v); %s, so perfsleuth raises it before loading", cur, err, raise)
		c.Fix = "none needed"
		return c
	}
	c.Status = StatusMissing
	c.Detail = fmt.Sprintf("%s and limits BPF maps (%v); %s", cur, err, raise)
	c.Fix = "run as root with CAP_SYS_RESOURCE, or raise the limit first (ulimit -l unlimited)"
	return c
}
