// Package loopfs mounts a fresh ext4 file system, with its journal, on a
// loop device for a test: the tests that need a journal (the root file
// system here has none) or a mount option of their own. It is used by
// tests only.
package loopfs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Ext4 makes an ext4 file system of size bytes in a file in the test's
// temporary directory, mounts it on a loop device with the mount options
// opts ("" for none) and returns its mount point and the loop device
// ("/dev/loop0"). Everything is unmounted and detached at the end. It
// skips the test when it is not root or a tool or a loop device is missing.
func Ext4(t testing.TB, size int64, opts string) (dir, dev string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("not root: the test mounts a file system")
	}
	for _, tool := range []string{"losetup", "mkfs.ext4", "mount", "umount"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found: the test needs a loop device with ext4 on it", tool)
		}
	}
	img := filepath.Join(t.TempDir(), "fs.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, size); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "-f", "--show", img).Output()
	if err != nil {
		t.Skipf("no loop device here: %v", err)
	}
	dev = strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("losetup", "-d", dev).Run() })
	if out, err := exec.Command("mkfs.ext4", "-q", dev).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4 %s: %v\n%s", dev, err, out)
	}
	dir = t.TempDir()
	args := []string{dev, dir}
	if opts != "" {
		args = append([]string{"-o", opts}, args...)
	}
	if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
		t.Skipf("mount %s: %v\n%s", dev, err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	return dir, dev
}
