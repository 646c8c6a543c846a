package age

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fiemap is the head of struct fiemap (linux/fiemap.h); asked with no
// room for extents, the kernel only counts them in mappedExtents.
type fiemap struct {
	start         uint64
	length        uint64
	flags         uint32
	mappedExtents uint32
	extentCount   uint32
	reserved      uint32
}

// fsIocFiemap is FS_IOC_FIEMAP, _IOWR('f', 11, struct fiemap);
// fiemapFlagSync is FIEMAP_FLAG_SYNC (write the file's dirty data first,
// so that delayed allocation has placed it).
const (
	fsIocFiemap    = 0xC020660B
	fiemapFlagSync = 0x1
)

// extents is how many extents f's data takes on its file system, -1 when
// the file system does not say (tmpfs, some network file systems).
func extents(f *os.File) int64 {
	m := fiemap{length: ^uint64(0), flags: fiemapFlagSync}
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), fsIocFiemap, uintptr(unsafe.Pointer(&m))); errno != 0 {
		return -1
	}
	return int64(m.mappedExtents)
}
