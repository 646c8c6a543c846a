package age

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/loopfs"
)

// freeOf is the free space of dir's file system and its size.
func freeOf(t *testing.T, dir string) (free, size int64) {
	t.Helper()
	var sfs unix.Statfs_t
	if err := unix.Statfs(dir, &sfs); err != nil {
		t.Fatal(err)
	}
	return int64(sfs.Bavail) * sfs.Bsize, int64(sfs.Blocks) * sfs.Bsize
}

// emptyDir fails the test when dir holds anything but ext4's lost+found.
func emptyDir(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != "lost+found" {
			t.Errorf("left behind in %s: %s", dir, e.Name())
		}
	}
}

// TestAgeFragments: on a file system of its own (a 128 MiB ext4 on a loop
// device, whose counters only this test moves), an area filled to the
// most bench age takes, every other small file deleted: the fresh write
// takes a few extents, the aged one hundreds (the holes between small
// files), in more requests; each wrote at least its bytes to the device,
// with the file system's metadata and journal on top, and nothing is
// left behind.
func TestAgeFragments(t *testing.T) {
	// noinit_itable: no background zeroing of inode tables on the device
	// while a write is measured.
	dir, dev := loopfs.Ext4(t, 128<<20, "noinit_itable")
	// No blocks reserved for root (5% by default): this test runs as
	// root, which may write there, and the aged write found that space
	// untouched (one extent).
	if out, err := exec.Command("tune2fs", "-m", "0", dev).CombinedOutput(); err != nil {
		t.Skipf("tune2fs -m 0 %s: %v\n%s", dev, err, out)
	}
	free, size := freeOf(t, dir)
	c := Config{Dir: dir, Small: 6 << 10, Delete: 0.5, Write: 8 << 20}
	c.Area = free - c.Write - int64(reserveShare*float64(size)) - 1<<20
	if Need(c, size) > free {
		t.Fatalf("the test's area %d needs %d of %d free", c.Area, Need(c, size), free)
	}
	var phases []string
	res, err := Run(context.Background(), c, func(p string) { phases = append(phases, p) })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", res.Text())
	t.Logf("phases %q", phases)
	emptyDir(t, dir)
	if res.Interrupted || res.Fresh == nil || res.Aged == nil {
		t.Fatalf("result %+v: want both writes", res)
	}
	if !strings.HasPrefix(res.Device, "loop") || res.FS != "ext4" {
		t.Errorf("device %q, fs %q: want the loop device's ext4", res.Device, res.FS)
	}
	if want := c.Area / onDisk(c.Small, res.BlockSize); res.Files != want || res.Deleted != want/2 {
		t.Errorf("%d small files, %d deleted: want %d, %d", res.Files, res.Deleted, want, want/2)
	}
	for name, w := range map[string]*Write{"fresh": res.Fresh, "aged": res.Aged} {
		if w.AppBytes != c.Write {
			t.Errorf("%s: %d bytes written, want %d", name, w.AppBytes, c.Write)
		}
		// The data, and a little metadata and journal: the loop device
		// is this test's alone.
		if w.Amplification < 1 || w.Amplification > 1.25 {
			t.Errorf("%s: %d bytes reached the device for %d written (%.3fx): want the data and a little more", name, w.DeviceBytes, w.AppBytes, w.Amplification)
		}
		if w.Extents < 1 || w.DeviceRequests < 1 || w.Seconds <= 0 {
			t.Errorf("%s: %+v: want extents, requests and a time", name, *w)
		}
	}
	if res.Aged.Extents < 50 || res.Aged.Extents < 10*res.Fresh.Extents {
		t.Errorf("the aged write took %d extents, the fresh one %d: want the holes between small files to show", res.Aged.Extents, res.Fresh.Extents)
	}
	if res.Aged.DeviceRequests <= res.Fresh.DeviceRequests {
		t.Errorf("the aged write took %d requests, the fresh one %d: want more", res.Aged.DeviceRequests, res.Fresh.DeviceRequests)
	}
}

// TestAgeInterrupted: stopped while it fills the area, it returns what
// it measured (the fresh write), says it was interrupted, and removes
// everything it made.
func TestAgeInterrupted(t *testing.T) {
	dir := t.TempDir()
	c := Config{Dir: dir, Area: 512 << 20, Small: 4 << 10, Delete: 0.5, Write: 1 << 20}
	if err := Validate(&c); err != nil {
		t.Skipf("this file system: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := Run(ctx, c, func(p string) {
		if strings.HasPrefix(p, "filling") {
			cancel()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted || res.Fresh == nil || res.Aged != nil || res.Files >= c.Area/(4<<10) {
		t.Errorf("result %+v: want the fresh write, the fill cut short and interrupted", res)
	}
	if !strings.Contains(res.Text(), "interrupted") {
		t.Errorf("the text does not say it was interrupted: %s", res.Text())
	}
	emptyDir(t, dir)
}

// TestAgeRefusesToFill: an area the file system does not have room for
// beside the writes is refused before anything is written.
func TestAgeRefusesToFill(t *testing.T) {
	dir := t.TempDir()
	free, _ := freeOf(t, dir)
	c := Config{Dir: dir, Area: free, Small: 6 << 10, Delete: 0.5, Write: 1 << 20}
	err := Validate(&c)
	if err == nil || !strings.Contains(err.Error(), "would fill the file system") || !strings.Contains(err.Error(), "--area") {
		t.Errorf("an area of all the free space: %v, want a refusal that names --area", err)
	}
	if _, err := Run(context.Background(), c, nil); err == nil {
		t.Errorf("Run did not refuse")
	}
	emptyDir(t, dir)
}
