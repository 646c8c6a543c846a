// Package symbolize turns the instruction addresses of captured stacks
// (bpf_get_stackid kernel and user stacks) into function names for the
// off-CPU stack report.
//
// Kernel addresses are looked up in /proc/kallsyms. A user address goes
// through a snapshot of its process's executable mappings ([Maps]) to a file
// offset, then to the ELF file's symbol tables. The snapshot is separate and
// cheap because a command may exit before the report is made: the caller takes
// it while the process runs and symbolises later. Parsed ELF files are cached
// by [User] and shared between processes (every process maps libc); only
// sorted (address, size, name) tables are kept.
package symbolize

import (
	"cmp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// sym is one function, [addr, addr+size).
type sym struct {
	addr, size uint64
	name       string
}

// table is a list of functions sorted by address, one per address.
type table []sym

// binding ranks symbol bindings: an exported name reads better in a report
// than a file-local one.
const (
	bindGlobal = iota
	bindWeak
	bindLocal
)

// candidate is a symbol before aliases are resolved and sizes are known.
type candidate struct {
	sym
	bind int
	// limit bounds an unsized symbol (size 0): it ends at the next symbol
	// or at limit (the end of its section), whichever comes first.
	limit uint64
}

// buildTable sorts the candidates, keeps the best name where several share
// an address, and gives unsized symbols the size up to the next one.
func buildTable(cs []candidate) table {
	slices.SortFunc(cs, func(a, b candidate) int {
		if c := cmp.Compare(a.addr, b.addr); c != 0 {
			return c
		}
		return better(a, b)
	})
	cs = slices.CompactFunc(cs, func(a, b candidate) bool { return a.addr == b.addr })
	t := make(table, 0, len(cs))
	for i, c := range cs {
		if c.size == 0 {
			end := c.limit
			if i+1 < len(cs) && cs[i+1].addr < end {
				end = cs[i+1].addr
			}
			if end <= c.addr {
				continue
			}
			c.size = end - c.addr
		}
		t = append(t, c.sym)
	}
	return slices.Clip(t)
}

// better orders aliases at one address, best first, after perf's
// choose_best_symbol (tools/perf/util/symbol.c) except that the name a
// reader knows wins over the binding: getpid over __getpid,
// pthread_mutex_lock over __pthread_mutex_lock.
func better(a, b candidate) int {
	if (a.size > 0) != (b.size > 0) {
		if a.size > 0 {
			return -1 // a sized symbol says where the function ends
		}
		return 1
	}
	if c := cmp.Compare(leadingUnderscores(a.name), leadingUnderscores(b.name)); c != 0 {
		return c
	}
	if c := cmp.Compare(a.bind, b.bind); c != 0 {
		return c
	}
	if c := cmp.Compare(len(a.name), len(b.name)); c != 0 {
		return c
	}
	return strings.Compare(a.name, b.name)
}

func leadingUnderscores(s string) int {
	return len(s) - len(strings.TrimLeft(s, "_"))
}

// lookup returns the function containing addr and addr's offset in it.
func (t table) lookup(addr uint64) (name string, off uint64, ok bool) {
	i := sort.Search(len(t), func(i int) bool { return t[i].addr > addr }) - 1
	if i < 0 || addr-t[i].addr >= t[i].size {
		return "", 0, false
	}
	return t[i].name, addr - t[i].addr, true
}

// withOffset formats a resolved address as "name+0xoff".
func withOffset(name string, off uint64) string {
	return name + "+0x" + strconv.FormatUint(off, 16)
}

// hex formats an unresolved address.
func hex(addr uint64) string {
	return "0x" + strconv.FormatUint(addr, 16)
}

// Function is the function a named frame is in: the frame without its
// offset ("work+0x39 (cpuscen)" is "work (cpuscen)"), so that samples at
// different places in one function add up, as in perf report and flame
// graphs. An unnamed frame (an address) is returned as it is.
func Function(frame string) string {
	i := strings.Index(frame, "+0x")
	if i <= 0 {
		return frame
	}
	j := i + 3
	for j < len(frame) && strings.IndexByte("0123456789abcdef", frame[j]) >= 0 {
		j++
	}
	return frame[:i] + frame[j:]
}
