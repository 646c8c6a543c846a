package age

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/perfsleuth/perfsleuth/internal/loopfs"
)

// TestNVMeLogs decodes the two logs as the NVMe base specification (SMART
// / health information, log 02h: data units written in bytes 63:48) and
// the OCP datacenter NVMe SSD specification (SMART / health information
// extended, log C0h: physical media units written in bytes 15:0, the log
// page GUID in bytes 511:496) lay them out; the admin command has the
// kernel's size (struct nvme_passthru_cmd, 72 bytes: the ioctl's number
// carries it).
func TestNVMeLogs(t *testing.T) {
	if n := unsafe.Sizeof(nvmeAdminCmd{}); n != 72 || nvmeIoctlAdminCmd>>16&0x3fff != 72 {
		t.Fatalf("the admin command is %d bytes, its ioctl says %d: want 72", n, nvmeIoctlAdminCmd>>16&0x3fff)
	}
	smart := make([]byte, nvmeLogSize)
	binary.LittleEndian.PutUint64(smart[32:], 7) // data units read: not what is read
	binary.LittleEndian.PutUint64(smart[48:], 1234)
	if got := smartHostWritten(smart); got != 1234*512000 {
		t.Errorf("SMART host writes %d, want %d", got, 1234*512000)
	}
	ocp := make([]byte, nvmeLogSize)
	binary.LittleEndian.PutUint64(ocp[0:], 5<<30)
	if _, ok := ocpMediaWritten(ocp); ok {
		t.Error("a log without the OCP GUID read as the OCP log")
	}
	// The GUID AFD514C97C6F4F9CA4F2BFEA2810AFC5h, stored little-endian.
	guid := []byte{0xAF, 0xD5, 0x14, 0xC9, 0x7C, 0x6F, 0x4F, 0x9C, 0xA4, 0xF2, 0xBF, 0xEA, 0x28, 0x10, 0xAF, 0xC5}
	for i, b := range guid {
		ocp[511-i] = b
	}
	if got, ok := ocpMediaWritten(ocp); !ok || got != 5<<30 {
		t.Errorf("OCP media writes %d (%v), want %d", got, ok, 5<<30)
	}
}

// TestCountersOf finds an NVMe namespace's controller, a partition's
// disk's, and says why any other device is not read, on a /sys laid out
// as the kernel lays it out (class/block links into the device tree); and
// on this machine's own /sys, the loop device is said to be no NVMe
// device.
func TestCountersOf(t *testing.T) {
	sys := t.TempDir()
	dev := func(path string) {
		t.Helper()
		full := filepath.Join(sys, "devices", path)
		if err := os.MkdirAll(full, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(sys, "class/block"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(full, filepath.Join(sys, "class/block", filepath.Base(path))); err != nil {
			t.Fatal(err)
		}
	}
	dev("pci0/nvme/nvme1/nvme1n1")
	dev("pci0/nvme/nvme1/nvme1n1/nvme1n1p2")
	if err := os.WriteFile(filepath.Join(sys, "devices/pci0/nvme/nvme1/nvme1n1/nvme1n1p2/partition"), []byte("2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dev("pci0/nvme-subsys0/nvme0c0n1")
	dev("virtio1/block/vda")
	for device, want := range map[string]string{"nvme1n1": "/dev/nvme1", "nvme1n1p2": "/dev/nvme1", "nvme0c0n1": "/dev/nvme0", "vda": ""} {
		got := countersOf(sys, device)
		if got.ctrl != want {
			t.Errorf("%s: controller %q, want %q", device, got.ctrl, want)
		}
		if want == "" && !strings.Contains(got.why, device+" is not an NVMe device") {
			t.Errorf("%s: %q: want it said that it is not NVMe", device, got.why)
		}
	}

	_, loopDev := loopfs.Ext4(t, 16<<20, "")
	loop := filepath.Base(loopDev)
	src := countersOf("/sys", loop)
	if _, err := src.read(); err == nil || !strings.Contains(err.Error(), "is not an NVMe device") {
		t.Errorf("%s: read: %v: want it said that it is not NVMe", loop, err)
	}
}

// TestNVMeCountersHere reads the counters of an NVMe controller where the
// machine has one (/dev/nvme0); the CI machine's disk is virtio, and the
// test says it was skipped.
func TestNVMeCountersHere(t *testing.T) {
	if _, err := os.Stat("/dev/nvme0"); err != nil {
		t.Skip("no /dev/nvme0 on this machine: its counters are tested where one is")
	}
	c, err := counterSource{ctrl: "/dev/nvme0"}.read()
	if err != nil {
		t.Fatal(err)
	}
	if c.Host <= 0 {
		t.Errorf("/dev/nvme0 says hosts sent it %d bytes: want its lifetime's writes", c.Host)
	}
	t.Logf("/dev/nvme0: host writes %d bytes, media writes %d (-1: no OCP log)", c.Host, c.Media)
}
