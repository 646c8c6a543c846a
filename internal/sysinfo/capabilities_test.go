package sysinfo

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/procfs"
)

// TestCapabilities runs every check and cross-checks the ones whose answer
// the file system tells independently, instead of hard-coding this machine.
func TestCapabilities(t *testing.T) {
	checks := Capabilities()
	byName := map[string]Check{}
	for _, c := range checks {
		t.Logf("%-24s %-8s %s | fix: %s", c.Name, c.Status, c.Detail, c.Fix)
		if c.Name == "" || c.Detail == "" {
			t.Errorf("check %+v: name and detail must be set", c)
		}
		switch c.Status {
		case StatusOK:
		case StatusMissing, StatusDegraded:
			if c.Fix == "" {
				t.Errorf("%s is %s but says no fix", c.Name, c.Status)
			}
		default:
			t.Errorf("%s: invalid status %q", c.Name, c.Status)
		}
		if _, dup := byName[c.Name]; dup {
			t.Errorf("check %s appears twice", c.Name)
		}
		byName[c.Name] = c
	}
	for _, name := range []string{"privileges", "kernel_btf", "bpf_tracepoint", "bpf_raw_tracepoint", "bpf_tp_btf",
		"bpf_perf_event", "bpf_kprobe", "bpf_fentry", "bpf_ringbuf", "bpf_task_storage", "bpf_percpu_array",
		"bpf_iter_task", "tracefs", "tracepoints", "perf_hardware_counters", "perf_cpu_clock", "perf_event_paranoid",
		"delay_accounting", "psi_io", "cgroup_v2", "drop_caches", "rlimit_memlock"} {
		if _, ok := byName[name]; !ok {
			t.Errorf("check %s did not run", name)
		}
	}

	status := func(name string) string { return byName[name].Status }
	expect := func(name string, wantOK bool, why string) {
		t.Helper()
		if got := status(name) == StatusOK; got != wantOK {
			t.Errorf("%s is %s (%s), but %s", name, status(name), byName[name].Detail, why)
		}
	}

	capEff := readCapEff(t)
	privileged := capEff&(1<<capSysAdmin) != 0 || (capEff&(1<<capBPF) != 0 && capEff&(1<<capPerfmon) != 0)
	expect("privileges", privileged, "CapEff is "+strconv.FormatUint(capEff, 16))

	_, errBTF := os.Stat("/sys/kernel/btf/vmlinux")
	expect("kernel_btf", errBTF == nil, "the existence of /sys/kernel/btf/vmlinux says otherwise")
	if privileged && errBTF == nil {
		// Every kernel with BTF (5.5+) has tp_btf, raw_tp and task iterators (5.8+).
		for _, name := range []string{"bpf_tp_btf", "bpf_raw_tracepoint", "bpf_ringbuf", "bpf_percpu_array", "perf_cpu_clock", "tracepoints"} {
			expect(name, true, "privileged with kernel BTF")
		}
	}

	tracefs := false
	for _, d := range tracefsDirs {
		if _, err := os.Stat(filepath.Join(d, "events")); err == nil {
			tracefs = true
		}
	}
	expect("tracefs", tracefs, "tracefs events/ presence says otherwise")

	_, errPSI := os.ReadFile("/proc/pressure/io")
	expect("psi_io", errPSI == nil, "/proc/pressure/io readability says otherwise")

	delay := strings.TrimSpace(ReadString("/proc/sys/kernel/task_delayacct"))
	if delay == "" || delay == "0" {
		if status("delay_accounting") != StatusMissing {
			t.Errorf("delay_accounting is %s with task_delayacct=%q", status("delay_accounting"), delay)
		}
	}

	if capEff&(1<<capSysAdmin) != 0 && os.Geteuid() == 0 {
		expect("drop_caches", true, "root with CAP_SYS_ADMIN can write drop_caches")
	}

	if mp := cgroup2Mount(t); mp == "" {
		if status("cgroup_v2") != StatusMissing {
			t.Errorf("cgroup_v2 is %s but no cgroup2 is mounted", status("cgroup_v2"))
		}
	} else {
		have := strings.Fields(ReadString(filepath.Join(mp, "cgroup.controllers")))
		all := true
		for _, want := range cgroupControllers {
			all = all && strings.Contains(" "+strings.Join(have, " ")+" ", " "+want+" ")
		}
		expect("cgroup_v2", all, "controllers at "+mp+" are "+strings.Join(have, " "))
	}
}

func readCapEff(t *testing.T) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no CapEff in /proc/self/status")
	return 0
}

func cgroup2Mount(t *testing.T) string {
	t.Helper()
	mounts, err := procfs.GetMounts()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mounts {
		if m.FSType == "cgroup2" {
			return UnescapeMountinfo(m.MountPoint)
		}
	}
	return ""
}
