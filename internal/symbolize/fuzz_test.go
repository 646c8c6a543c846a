package symbolize

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// FuzzMapsLine: a line the kernel could write for an executable mapping
// (fs/proc/task_mmu.c: the path after padding, spaces in it kept, a
// newline escaped) parses back to its fields; any other line gives a
// mapping, nothing or an error, never a panic.
func FuzzMapsLine(f *testing.F) {
	f.Add(uint64(0x400000), uint64(0x1000), uint64(0), uint32(8), uint32(1), uint64(1234), "/usr/bin/x", false)
	f.Add(uint64(0x7f0000000000), uint64(0x2000), uint64(0x3000), uint32(259), uint32(3), uint64(0), "/tmp/my lib.so", true)
	f.Add(uint64(math.MaxUint64-0x1000), uint64(0x1000), uint64(math.MaxUint64), uint32(4095), uint32(1<<20-1), uint64(math.MaxUint64), "[vdso]", false)
	f.Fuzz(func(t *testing.T, start, size, off uint64, major, minor uint32, inode uint64, path string, deleted bool) {
		parseMapsLine(path)
		if size == 0 || start+size < start || major >= 1<<12 || minor >= 1<<20 ||
			path == "" || path[0] == ' ' || strings.ContainsAny(path, "\n") || strings.HasSuffix(path, deletedSuffix) {
			t.Skip("not something the kernel writes")
		}
		suffix := ""
		if deleted {
			suffix = deletedSuffix
		}
		line := fmt.Sprintf("%08x-%08x r-xp %08x %02x:%02x %d", start, start+size, off, major, minor, inode)
		line += strings.Repeat(" ", max(1, 73-len(line))) + path + suffix
		m, ok, err := parseMapsLine(line)
		want := Mapping{Start: start, End: start + size, Offset: off, Dev: unix.Mkdev(major, minor), Inode: inode, Path: path, Deleted: deleted}
		if err != nil || !ok || m != want {
			t.Errorf("parseMapsLine(%q) = %+v %v %v, want %+v", line, m, ok, err, want)
		}
		for i := range len(line) {
			parseMapsLine(line[:i])
		}
	})
}

// FuzzKallsyms: any kallsyms text gives functions that each end after
// they start (or at the top of the address space), or an error; never a
// panic.
func FuzzKallsyms(f *testing.F) {
	f.Add([]byte("ffffffff81000000 T _stext\nffffffff81000010 t helper\nffffffff81000100 D data\n"))
	f.Add([]byte("0000000000000000 T hidden\n"))
	f.Add([]byte("ffffffffffffff00 T last [mod]\n"))
	f.Add([]byte("zz T bad\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fs, err := ReadKallsyms(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, fn := range fs {
			if fn.End <= fn.Start && fn.End != math.MaxUint64 {
				t.Errorf("%s: [%#x, %#x)", fn.Name, fn.Start, fn.End)
			}
		}
		k, err := parseKallsyms(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("ReadKallsyms took it, parseKallsyms: %v", err)
		}
		for _, fn := range fs {
			k.Symbol(fn.Start)
			k.Symbol(fn.End - 1)
		}
	})
}
