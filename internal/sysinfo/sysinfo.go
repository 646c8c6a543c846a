// Package sysinfo records what the machine is: CPUs and their core types and
// frequency policy, memory, and the file system and disks behind the
// workload's directory. A run carries these facts so that two runs can be
// compared knowingly (a big.LITTLE phone core is not a server core; ext4 on
// an SSD with mq-deadline is not tmpfs).
//
// It also answers `perfsleuth doctor` (Capabilities): which kernel features
// perfsleuth can use here, each one actually probed.
//
// Everything is read from /proc and /sys under a root that tests point at
// fixtures; nothing here needs root except some capability probes.
package sysinfo

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/prometheus/procfs"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// Collect describes this host. dir, when not empty, is the workload's
// directory: its file system and disks go into Host.Storage. Facts that cannot
// be read are left empty and explained in the returned warnings.
func Collect(dir string) (model.Host, []string) {
	h, warnings := collectFrom("/proc", "/sys")
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		warnings = append(warnings, fmt.Sprintf("uname: %v", err))
	} else {
		h.Hostname = unix.ByteSliceToString(u.Nodename[:])
		h.Kernel = unix.ByteSliceToString(u.Release[:]) + " " + unix.ByteSliceToString(u.Version[:])
		h.Arch = unix.ByteSliceToString(u.Machine[:])
	}
	if dir != "" {
		st, err := StorageOf(dir)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("storage of %s unknown: %v", dir, err))
		}
		h.Storage = st
	}
	return h, warnings
}

// collectFrom reads the CPU and memory facts from a /proc and /sys tree.
func collectFrom(procRoot, sysRoot string) (model.Host, []string) {
	var h model.Host
	cpus, cpuModel, warnings := collectCPUs(procRoot, sysRoot)
	h.CPUs = cpus
	h.CPUModel = cpuModel
	h.CPUsOnline = len(cpus)
	if b, err := os.ReadFile(filepath.Join(sysRoot, "devices/system/cpu/online")); err == nil {
		if n := len(ParseCPUList(string(b))); n > 0 {
			h.CPUsOnline = n
		}
	}
	fs, err := procfs.NewFS(procRoot)
	if err == nil {
		var mi procfs.Meminfo
		if mi, err = fs.Meminfo(); err == nil && mi.MemTotalBytes != nil {
			h.MemTotalBytes = int64(*mi.MemTotalBytes)
		}
	}
	if err != nil {
		warnings = append(warnings, fmt.Sprintf("memory size unknown: %v", err))
	}
	return h, warnings
}
