package age

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The device's own writes. The block layer's counters say what the file
// system sent the device; what the device then wrote inside itself (flash
// pages, garbage collection) only it can say. An NVMe device says it in
// two logs an administrator's command reads (what `nvme smart-log` and
// `nvme ocp smart-add-log` print): the SMART log's "data units written"
// (what hosts sent it, in units of 512,000 bytes, every NVMe device has
// it) and, on devices that follow the Open Compute Project's datacenter
// SSD specification, the OCP log's "physical media units written" (bytes
// written to the media: the device's own write amplification is its ratio
// to the first). Other devices (SATA, virtio, eMMC) are not read: the
// result says so.

// deviceCounters is what an NVMe device says it has written, in bytes.
type deviceCounters struct {
	// Host is the SMART log's data units written, in bytes.
	Host int64
	// Media is the OCP log's physical media units written; -1 when the
	// device has no OCP log.
	Media int64
}

// counterSource is where a block device's own write counters are read.
type counterSource struct {
	// ctrl is the NVMe controller's character device (/dev/nvme0); ""
	// when the device is not NVMe.
	ctrl string
	// why says why there is nothing to read when ctrl is "".
	why string
}

var nvmeNamespace = regexp.MustCompile(`^nvme(\d+)(?:c\d+)?n\d+$`)

// countersOf finds the NVMe controller of block device (a disk or a
// partition, as /proc/diskstats names it) under sys (/sys).
func countersOf(sys, device string) counterSource {
	disk := device
	if _, err := os.Stat(filepath.Join(sys, "class/block", device, "partition")); err == nil {
		if target, err := filepath.EvalSymlinks(filepath.Join(sys, "class/block", device)); err == nil {
			disk = filepath.Base(filepath.Dir(target))
		}
	}
	m := nvmeNamespace.FindStringSubmatch(disk)
	if m == nil {
		return counterSource{why: fmt.Sprintf("not read: %s is not an NVMe device, and perfsleuth reads a device's own write counters only from NVMe's SMART and OCP logs", disk)}
	}
	return counterSource{ctrl: "/dev/nvme" + m[1]}
}

// NVMe's admin command for a log page (struct nvme_passthru_cmd of
// linux/nvme_ioctl.h) and its ioctl, _IOWR('N', 0x41, 72 bytes).
type nvmeAdminCmd struct {
	opcode      uint8
	flags       uint8
	rsvd1       uint16
	nsid        uint32
	cdw2, cdw3  uint32
	metadata    uint64
	addr        uint64
	metadataLen uint32
	dataLen     uint32
	cdw10       uint32
	cdw11       uint32
	cdw12       uint32
	cdw13       uint32
	cdw14       uint32
	cdw15       uint32
	timeoutMs   uint32
	result      uint32
}

const (
	nvmeIoctlAdminCmd = 0xC0484E41
	nvmeGetLogPage    = 0x02
	nvmeLogSMART      = 0x02
	nvmeLogOCP        = 0xC0
	nvmeLogSize       = 512
	// nvmeDataUnit is the SMART log's unit: a thousand 512-byte blocks.
	nvmeDataUnit = 512 * 1000
)

// ocpGUID is the OCP SMART/health log's identifier (its last 16 bytes),
// AFD514C9-7C6F-4F9C-A4F2-BFEA2810AFC5 as the log stores it.
var ocpGUID = [16]byte{0xC5, 0xAF, 0x10, 0x28, 0xEA, 0xBF, 0xF2, 0xA4, 0x9C, 0x4F, 0x6F, 0x7C, 0xC9, 0x14, 0xD5, 0xAF}

// readLog reads log page lid of the controller open as fd.
func readLog(fd int, lid uint32) ([]byte, error) {
	buf := make([]byte, nvmeLogSize)
	cmd := nvmeAdminCmd{opcode: nvmeGetLogPage, nsid: 0xFFFFFFFF, addr: uint64(uintptr(unsafe.Pointer(&buf[0]))), dataLen: nvmeLogSize,
		cdw10: lid | (nvmeLogSize/4-1)<<16}
	status, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), nvmeIoctlAdminCmd, uintptr(unsafe.Pointer(&cmd)))
	if e != 0 {
		return nil, e
	}
	if status != 0 {
		return nil, fmt.Errorf("the device answered status %#x", status)
	}
	return buf, nil
}

// read reads the controller's counters.
func (s counterSource) read() (deviceCounters, error) {
	if s.ctrl == "" {
		return deviceCounters{}, errors.New(s.why)
	}
	fd, err := unix.Open(s.ctrl, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return deviceCounters{}, fmt.Errorf("open %s: %w", s.ctrl, err)
	}
	defer unix.Close(fd)
	smart, err := readLog(fd, nvmeLogSMART)
	if err != nil {
		return deviceCounters{}, fmt.Errorf("read %s's SMART log: %w", s.ctrl, err)
	}
	c := deviceCounters{Host: smartHostWritten(smart), Media: -1}
	if ocp, err := readLog(fd, nvmeLogOCP); err == nil {
		if media, ok := ocpMediaWritten(ocp); ok {
			c.Media = media
		}
	}
	return c, nil
}

// smartHostWritten is the SMART log's data units written (bytes 48-63, a
// 128-bit count of 512,000-byte units, of which the low 64 bits are read)
// in bytes.
func smartHostWritten(log []byte) int64 {
	return int64(binary.LittleEndian.Uint64(log[48:56])) * nvmeDataUnit
}

// ocpMediaWritten is the OCP log's physical media units written (bytes
// 0-15, in bytes; the low 64 bits are read), when the log is the OCP one
// (its GUID in bytes 496-511).
func ocpMediaWritten(log []byte) (int64, bool) {
	if len(log) < nvmeLogSize || [16]byte(log[496:512]) != ocpGUID {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint64(log[0:8])), true
}
