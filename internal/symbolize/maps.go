package symbolize

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// deletedSuffix is what the kernel appends to the path of a mapped file
// that was unlinked (or replaced, as a package upgrade does) after mmap.
const deletedSuffix = " (deleted)"

// Mapping is one executable region of a process's address space backed by
// a file (or by the kernel, as [vdso] is).
type Mapping struct {
	Start, End uint64 // virtual addresses [Start, End)
	Offset     uint64 // file offset mapped at Start
	Dev        uint64 // device of the file, as unix.Mkdev(major, minor)
	Inode      uint64 // 0 for kernel-provided code such as [vdso]
	// Path is the file as the process sees it (in its mount namespace),
	// without the " (deleted)" suffix.
	Path string
	// Deleted tells that the file was unlinked after it was mapped: Path
	// may no longer exist or may name another file.
	Deleted bool
}

// Maps is a snapshot of one process's executable mappings, from
// /proc/PID/maps. It opens no files, so it is cheap enough to take again
// and again while the process runs: a user stack is symbolised against the
// snapshot, after the process may have exited.
type Maps struct {
	Pid      int
	Mappings []Mapping // sorted by Start, not overlapping
}

// ReadMaps takes the snapshot of process pid.
func ReadMaps(pid int) (*Maps, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		return nil, fmt.Errorf("maps of pid %d: %w", pid, err)
	}
	defer f.Close()
	ms, err := parseMaps(f)
	if err != nil {
		return nil, fmt.Errorf("maps of pid %d: %w", pid, err)
	}
	return &Maps{Pid: pid, Mappings: ms}, nil
}

// parseMaps keeps the executable, named mappings of a maps file.
// Anonymous executable memory (JIT code) has no file to read symbols from.
func parseMaps(r io.Reader) ([]Mapping, error) {
	var out []Mapping
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20) // a path may be up to PATH_MAX and escaped
	for sc.Scan() {
		m, ok, err := parseMapsLine(sc.Text())
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, m)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// parseMapsLine parses "start-end perms offset major:minor inode   path";
// the path is the rest of the line and may contain spaces.
func parseMapsLine(line string) (Mapping, bool, error) {
	var f [5]string
	rest := line
	for i := range f {
		rest = strings.TrimLeft(rest, " ")
		var ok bool
		f[i], rest, ok = strings.Cut(rest, " ")
		if !ok && i < len(f)-1 {
			return Mapping{}, false, fmt.Errorf("short line %q", line)
		}
	}
	path := strings.TrimLeft(rest, " ")
	if len(f[1]) < 3 || f[1][2] != 'x' || path == "" {
		return Mapping{}, false, nil
	}
	start, end, ok1 := strings.Cut(f[0], "-")
	major, minor, ok2 := strings.Cut(f[3], ":")
	bad := !ok1 || !ok2
	num := func(s string, base, bits int) uint64 {
		n, err := strconv.ParseUint(s, base, bits)
		bad = bad || err != nil
		return n
	}
	m := Mapping{
		Start:  num(start, 16, 64),
		End:    num(end, 16, 64),
		Offset: num(f[2], 16, 64),
		Inode:  num(f[4], 10, 64),
	}
	m.Dev = unix.Mkdev(uint32(num(major, 16, 32)), uint32(num(minor, 16, 32)))
	if bad {
		return Mapping{}, false, fmt.Errorf("bad line %q", line)
	}
	m.Path, m.Deleted = strings.CutSuffix(path, deletedSuffix)
	return m, true, nil
}

// find returns the mapping containing addr, or nil.
func (m *Maps) find(addr uint64) *Mapping {
	if m == nil {
		return nil
	}
	i := sort.Search(len(m.Mappings), func(i int) bool { return m.Mappings[i].End > addr })
	if i < len(m.Mappings) && m.Mappings[i].Start <= addr {
		return &m.Mappings[i]
	}
	return nil
}

// Contains says whether addr lies in one of the snapshot's executable
// mappings: a frame outside them is not code, the sign of a stack walk that
// went astray (frame pointers omitted).
func (m *Maps) Contains(addr uint64) bool {
	return m != nil && m.find(addr) != nil
}
