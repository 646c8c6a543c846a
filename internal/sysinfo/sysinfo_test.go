package sysinfo

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/prometheus/procfs"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

func TestCollectFromARMBigLittle(t *testing.T) {
	h, warnings := collectFrom("testdata/arm_biglittle/proc", "testdata/arm_biglittle/sys")
	if len(warnings) > 0 {
		t.Errorf("warnings: %v", warnings)
	}
	if h.CPUsOnline != 8 || len(h.CPUs) != 8 {
		t.Fatalf("CPUsOnline=%d len(CPUs)=%d, want 8 and 8", h.CPUsOnline, len(h.CPUs))
	}
	for _, c := range h.CPUs {
		wantType, wantPart, wantCur, wantMax := "Cortex-A53", "0xd03", int64(1000000), int64(1800000)
		if c.ID >= 4 {
			wantType, wantPart, wantCur, wantMax = "Cortex-A73", "0xd09", 1416000, 2208000
		}
		if c.Type != wantType || c.Part != wantPart || c.Implementer != "0x41" {
			t.Errorf("cpu%d: type %q part %q implementer %q, want %q %q 0x41", c.ID, c.Type, c.Part, c.Implementer, wantType, wantPart)
		}
		if c.CurFreqKHz != wantCur || c.MaxFreqKHz != wantMax || c.Governor != "schedutil" {
			t.Errorf("cpu%d: cur %d max %d governor %q, want %d %d schedutil", c.ID, c.CurFreqKHz, c.MaxFreqKHz, c.Governor, wantCur, wantMax)
		}
	}
	if h.CPUModel != "4x Cortex-A53 + 4x Cortex-A73" {
		t.Errorf("CPUModel = %q", h.CPUModel)
	}
	if h.MemTotalBytes != 3884412*1024 {
		t.Errorf("MemTotalBytes = %d", h.MemTotalBytes)
	}
}

func TestARMCoreName(t *testing.T) {
	for _, tc := range []struct{ imp, part, want string }{
		{"0x41", "0xd03", "Cortex-A53"},
		{"0x41", "0xd0c", "Neoverse-N1"},
		{"0x41", "0xd4f", "Neoverse-V2"},
		{"0x41", "0xd82", "Cortex-X4"},
		{"0x41", "0xd99", "ARM part 0xd99"},
		{"0x61", "0x023", "Apple M1 Firestorm"},
		{"0x51", "0x805", "Kryo 4xx Silver"},
		{"0x51", "0x999", "Qualcomm part 0x999"},
		{"0x99", "0x001", "ARM implementer 0x99 part 0x1"},
	} {
		if got := armCoreName(tc.imp, tc.part); got != tc.want {
			t.Errorf("armCoreName(%s, %s) = %q, want %q", tc.imp, tc.part, got, tc.want)
		}
	}
}

func TestParseCPUList(t *testing.T) {
	if got := ParseCPUList("0-3,5,7-8\n"); !reflect.DeepEqual(got, []int{0, 1, 2, 3, 5, 7, 8}) {
		t.Errorf("ParseCPUList = %v", got)
	}
	if got := FormatCPUList([]int{0, 1, 2, 3, 5, 7, 8}); got != "0-3,5,7-8" {
		t.Errorf("FormatCPUList = %q", got)
	}
}

// TestCollectHere checks what holds on any Linux machine.
func TestCollectHere(t *testing.T) {
	h, warnings := Collect("")
	t.Logf("host: %+v warnings: %v", h, warnings)
	if h.Hostname == "" || h.Kernel == "" || h.Arch == "" {
		t.Errorf("hostname %q kernel %q arch %q: want all set", h.Hostname, h.Kernel, h.Arch)
	}
	if h.CPUsOnline < 1 || len(h.CPUs) < 1 || h.CPUModel == "" {
		t.Errorf("CPUsOnline %d, %d CPUs, model %q", h.CPUsOnline, len(h.CPUs), h.CPUModel)
	}
	for _, c := range h.CPUs {
		if c.Type == "" {
			t.Errorf("cpu%d has no type", c.ID)
		}
	}
	if h.MemTotalBytes <= 0 {
		t.Errorf("MemTotalBytes = %d", h.MemTotalBytes)
	}
	// cpufreq is absent in most VMs; when present, frequencies must be read.
	if _, err := os.Stat("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"); err == nil && h.CPUs[0].MaxFreqKHz == 0 {
		t.Errorf("cpu0 has cpufreq but MaxFreqKHz is 0")
	}
}

func TestFindMount(t *testing.T) {
	fs, err := procfs.NewFS("testdata/mounts/proc")
	if err != nil {
		t.Fatal(err)
	}
	mounts, err := fs.GetMounts()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path         string
		major, minor uint32
		wantMP       string
		wantFS       string
		wantID       int
	}{
		{"/home/alice/file", 253, 0, "/home", "xfs", 30},
		{"/home/alice/data/x", 8, 2, "/home/alice/data", "ext4", 32}, // bind mount below another device
		{"/var/log", 8, 2, "/", "ext4", 28},
		{"/home2/x", 8, 2, "/", "ext4", 28}, // /home is not a prefix of /home2
		{"/mnt/my disk/a", 8, 17, "/mnt/my disk", "ext4", 33},
		{"/mnt/stack/f", 8, 17, "/mnt/stack", "ext4", 35}, // the top of two stacked mounts
		{"/tmp/x", 0, 30, "/tmp", "tmpfs", 31},
		{"/home/x", 0, 99, "/home", "xfs", 30}, // btrfs-like anonymous st_dev: prefix only
	} {
		m := findMount(mounts, tc.path, tc.major, tc.minor)
		if m == nil {
			t.Errorf("%s: no mount", tc.path)
			continue
		}
		if mp := UnescapeMountinfo(m.MountPoint); mp != tc.wantMP || m.FSType != tc.wantFS || m.MountID != tc.wantID {
			t.Errorf("%s (%d:%d): got mount %d %s %s, want %d %s %s", tc.path, tc.major, tc.minor, m.MountID, mp, m.FSType, tc.wantID, tc.wantMP, tc.wantFS)
		}
	}
	for _, m := range mounts {
		if m.MountID == 30 {
			want := "rw,noatime,attr2,inode64,logbsize=32k,logbufs=8,noquota"
			if got := mountOptions(m); got != want {
				t.Errorf("mountOptions = %q, want %q", got, want)
			}
		}
	}
}

func TestUnescapeMountinfo(t *testing.T) {
	for in, want := range map[string]string{
		`/mnt/my\040disk`: "/mnt/my disk",
		`/a\134b`:         `/a\b`,
		`/plain`:          "/plain",
		`/trailing\04`:    `/trailing\04`,
	} {
		if got := UnescapeMountinfo(in); got != want {
			t.Errorf("UnescapeMountinfo(%q) = %q, want %q", in, got, want)
		}
	}
}

// makeSysBlock builds a /sys fragment: sda (rotational, mq-deadline) with
// partition sda2, sdb (none) with sdb1, dm-0 over sda2+sdb1, dm-1 over dm-0.
func makeSysBlock(t *testing.T) string {
	t.Helper()
	sys := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(sys, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, rel string) {
		p := filepath.Join(sys, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	write("devices/pci0/block/sda/queue/scheduler", "none [mq-deadline] kyber bfq\n")
	write("devices/pci0/block/sda/queue/rotational", "1\n")
	write("devices/pci0/block/sda/sda2/partition", "2\n")
	write("devices/pci0/block/sdb/queue/scheduler", "[none] mq-deadline\n")
	write("devices/pci0/block/sdb/queue/rotational", "0\n")
	write("devices/pci0/block/sdb/sdb1/partition", "1\n")
	write("devices/virtual/block/dm-0/queue/scheduler", "none\n")
	write("devices/virtual/block/dm-1/queue/scheduler", "none\n")
	link("../../../../pci0/block/sda/sda2", "devices/virtual/block/dm-0/slaves/sda2")
	link("../../../../pci0/block/sdb/sdb1", "devices/virtual/block/dm-0/slaves/sdb1")
	link("../../dm-0", "devices/virtual/block/dm-1/slaves/dm-0")
	devs := map[string]string{
		"sda":  "pci0/block/sda",
		"sda2": "pci0/block/sda/sda2",
		"sdb":  "pci0/block/sdb",
		"sdb1": "pci0/block/sdb/sdb1",
		"dm-0": "virtual/block/dm-0",
		"dm-1": "virtual/block/dm-1",
	}
	for name, dir := range devs {
		link("../../devices/"+dir, "class/block/"+name)
		if !strings.Contains(name, "sda2") && !strings.Contains(name, "sdb1") {
			link("../devices/"+dir, "block/"+name)
		}
	}
	for devno, dir := range map[string]string{"8:0": "pci0/block/sda", "8:2": "pci0/block/sda/sda2", "8:16": "pci0/block/sdb", "8:17": "pci0/block/sdb/sdb1", "253:0": "virtual/block/dm-0", "253:1": "virtual/block/dm-1"} {
		link("../../devices/"+dir, "dev/block/"+devno)
	}
	return sys
}

func TestFillDevice(t *testing.T) {
	sys := makeSysBlock(t)
	proc := t.TempDir()
	for _, tc := range []struct {
		major, minor uint32
		device       string
		disks        []string
		sched        string
		rotational   bool
	}{
		{8, 2, "sda2", []string{"sda"}, "mq-deadline", true},                       // partition -> disk
		{8, 16, "sdb", []string{"sdb"}, "none", false},                             // whole disk
		{253, 0, "dm-0", []string{"sda", "sdb"}, "sda=mq-deadline sdb=none", true}, // dm over two partitions
		{253, 1, "dm-1", []string{"sda", "sdb"}, "sda=mq-deadline sdb=none", true}, // dm over dm
	} {
		s := &model.Storage{}
		if err := fillDevice(s, proc, sys, tc.major, tc.minor); err != nil {
			t.Errorf("%d:%d: %v", tc.major, tc.minor, err)
			continue
		}
		if s.Device != tc.device || !reflect.DeepEqual(s.Disks, tc.disks) || s.Scheduler != tc.sched {
			t.Errorf("%d:%d: device %q disks %v scheduler %q, want %q %v %q", tc.major, tc.minor, s.Device, s.Disks, s.Scheduler, tc.device, tc.disks, tc.sched)
		}
		if s.Rotational == nil || *s.Rotational != tc.rotational {
			t.Errorf("%d:%d: rotational %v, want %v", tc.major, tc.minor, s.Rotational, tc.rotational)
		}
	}
}

// TestStorageOfHere checks the real file systems of this machine with
// assertions that hold on any Linux box.
func TestStorageOfHere(t *testing.T) {
	dirs := []string{"/", t.TempDir()}
	if wd, err := os.Getwd(); err == nil {
		dirs = append(dirs, wd)
	}
	for _, dir := range dirs {
		s, err := StorageOf(dir)
		if err != nil {
			t.Errorf("StorageOf(%s): %v", dir, err)
			continue
		}
		t.Logf("%s: %+v", dir, *s)
		if s.FSType == "" || s.MountPoint == "" || s.MountOptions == "" {
			t.Errorf("%s: fs type %q mount point %q options %q: want all set", dir, s.FSType, s.MountPoint, s.MountOptions)
		}
		if !underMount(s.Dir, s.MountPoint) {
			t.Errorf("%s: mount point %s is not a prefix of %s", dir, s.MountPoint, s.Dir)
		}
		if s.SizeBytes <= 0 {
			t.Errorf("%s: size %d", dir, s.SizeBytes)
		}
		var st unix.Stat_t
		if err := unix.Stat(s.Dir, &st); err != nil {
			t.Fatal(err)
		}
		if unix.Major(st.Dev) == 0 {
			continue
		}
		if s.Device == "" || len(s.Disks) == 0 {
			t.Errorf("%s: st_dev %d:%d but device %q disks %v", dir, unix.Major(st.Dev), unix.Minor(st.Dev), s.Device, s.Disks)
		}
		for _, d := range s.Disks {
			if _, err := os.Stat(filepath.Join("/sys/block", d)); err != nil {
				t.Errorf("%s: disk %s is not under /sys/block: %v", dir, d, err)
			}
		}
	}
}

func TestStorageOfProc(t *testing.T) {
	s, err := StorageOf("/proc")
	if err != nil {
		t.Fatal(err)
	}
	if s.FSType != "proc" || s.Device != "" || len(s.Disks) != 0 {
		t.Errorf("/proc: fs %q device %q disks %v, want proc and no device", s.FSType, s.Device, s.Disks)
	}
}

// TestKernelConfig: where the kernel's configuration can be read, it holds
// the options the probes read: a tick rate of one of the values Kconfig
// offers, and CONFIG_BPF set.
func TestKernelConfig(t *testing.T) {
	cfg, ok := KernelConfig()
	if !ok {
		t.Skip("no /proc/config.gz or /boot/config-RELEASE here")
	}
	if cfg["CONFIG_BPF"] != "y" {
		t.Errorf("CONFIG_BPF %q, want y", cfg["CONFIG_BPF"])
	}
	switch hz := KernelHZ(); hz {
	case 100, 250, 300, 1000:
	default:
		t.Errorf("KernelHZ %d (CONFIG_HZ %q), want 100, 250, 300 or 1000", hz, cfg["CONFIG_HZ"])
	}
}
