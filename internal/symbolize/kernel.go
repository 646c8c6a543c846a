package symbolize

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
)

// ErrKernelHidden is returned by [LoadKernel] when kallsyms lists every
// address as zero: kernel.kptr_restrict hides them from this user (1: from
// users without CAP_SYSLOG; 2: from everyone).
var ErrKernelHidden = errors.New("kernel addresses are hidden (kptr_restrict)")

// lastSymbolPage bounds the last kernel symbol, which has no next symbol to
// end it: it ends at the page after its start, as perf assumes for the last
// kallsyms entry (symbols__fixup_end in tools/perf/util/symbol.c).
const lastSymbolPage = 4096

// Kernel resolves kernel text addresses to function names from a kallsyms
// snapshot. It is immutable and safe for concurrent use.
type Kernel struct {
	syms table
}

// LoadKernel reads the kernel's symbols from path, normally /proc/kallsyms,
// text symbols of the kernel and of loaded modules (and BPF programs) alike.
// It returns an error wrapping [ErrKernelHidden] when the addresses are
// hidden.
func LoadKernel(path string) (*Kernel, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("kallsyms: %w", err)
	}
	defer f.Close()
	k, err := parseKallsyms(f)
	if err != nil {
		return nil, fmt.Errorf("kallsyms %s: %w", path, err)
	}
	return k, nil
}

// parseKallsyms reads lines of "address type name [module]". A function
// ends where the next symbol of any type starts, since kallsyms has no sizes.
func parseKallsyms(r io.Reader) (*Kernel, error) {
	var (
		starts []uint64 // every non-zero address, to end the symbol before it
		cs     []candidate
		lines  int
	)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 3 || len(f[1]) != 1 {
			continue
		}
		addr, err := strconv.ParseUint(string(f[0]), 16, 64)
		if err != nil {
			return nil, fmt.Errorf("bad address %q", f[0])
		}
		lines++
		if addr == 0 {
			continue // hidden, or a per-CPU offset (type A) that is not code
		}
		starts = append(starts, addr)
		bind := bindGlobal
		switch f[1][0] {
		case 'T':
		case 'W', 'w':
			bind = bindWeak
		case 't':
			bind = bindLocal
		default:
			continue // data
		}
		// A module symbol's "[module]" (f[3]) is dropped: the name is
		// enough to read a stack and keeps names alike across modules.
		cs = append(cs, candidate{sym: sym{addr: addr, name: string(f[2])}, bind: bind})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if lines == 0 {
		return nil, errors.New("no symbols")
	}
	if len(starts) == 0 {
		return nil, ErrKernelHidden
	}
	slices.Sort(starts)
	starts = slices.Compact(starts)
	for i := range cs {
		c := &cs[i]
		j, _ := slices.BinarySearch(starts, c.addr+1)
		if j < len(starts) {
			c.size = starts[j] - c.addr
		} else {
			c.size = (c.addr+lastSymbolPage-1)&^(lastSymbolPage-1) + lastSymbolPage - c.addr
		}
	}
	return &Kernel{syms: buildTable(cs)}, nil
}

// Symbol returns "function+0xoffset" for a kernel address, or the address
// in hex when no function contains it (or k is nil, kallsyms being
// unavailable).
func (k *Kernel) Symbol(addr uint64) string {
	if k != nil {
		if name, off, ok := k.syms.lookup(addr); ok {
			return withOffset(name, off)
		}
	}
	return hex(addr)
}
