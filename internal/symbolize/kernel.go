package symbolize

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
)

// ErrKernelHidden is returned by [LoadKernel] when kallsyms lists every
// address as zero: kernel.kptr_restrict hides them from this user (1: from
// users without CAP_SYSLOG; 2: from everyone).
var ErrKernelHidden = errors.New("kernel addresses are hidden (kptr_restrict)")

// ErrNoKernelSymbols is returned for a kallsyms file without a symbol line.
var ErrNoKernelSymbols = errors.New("no symbols")

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

// KernelFunc is one kernel text symbol from kallsyms: [Start, End), its
// type letter (T, t, W or w) and, for a module's symbol, the module.
type KernelFunc struct {
	Name, Module string
	Type         byte
	Start, End   uint64
}

// ReadKallsyms reads lines of "address type name [module]" and returns
// every text symbol, aliases included, in file order. A function ends where
// the next symbol of any type starts, since kallsyms has no sizes; the last
// one ends at the page after its start. It returns an error wrapping
// [ErrKernelHidden] when every address is zero.
func ReadKallsyms(r io.Reader) ([]KernelFunc, error) {
	return ReadKallsymsOf(r, nil)
}

// ReadKallsymsOf is ReadKallsyms keeping only the text symbols keep accepts
// (name, type letter, module without brackets, "" for the kernel's own);
// nil keeps all. The others still end the symbols before them, and are
// never copied: a probe that wants a few dozen functions of a kallsyms of
// 120,000 lines reads it in a fifth of the time.
func ReadKallsymsOf(r io.Reader, keep func(name []byte, typ byte, module []byte) bool) ([]KernelFunc, error) {
	var (
		starts []uint64 // every non-zero address, to end the symbol before it
		fs     []KernelFunc
		lines  int
	)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		addrField, typ, name, module, ok := kallsymsLine(sc.Bytes())
		if !ok {
			continue
		}
		addr, ok := parseHex(addrField)
		if !ok {
			return nil, fmt.Errorf("bad address %q", addrField)
		}
		lines++
		if addr == 0 {
			continue // hidden, or a per-CPU offset (type A) that is not code
		}
		starts = append(starts, addr)
		switch typ {
		case 'T', 't', 'W', 'w':
		default:
			continue // data
		}
		if keep != nil && !keep(name, typ, module) {
			continue
		}
		fs = append(fs, KernelFunc{Name: string(name), Module: string(module), Type: typ, Start: addr})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if lines == 0 {
		return nil, ErrNoKernelSymbols
	}
	if len(starts) == 0 {
		return nil, ErrKernelHidden
	}
	slices.Sort(starts)
	starts = slices.Compact(starts)
	for i := range fs {
		f := &fs[i]
		j, _ := slices.BinarySearch(starts, f.Start+1)
		if j < len(starts) {
			f.End = starts[j]
		} else if f.Start < math.MaxUint64-2*lastSymbolPage {
			f.End = (f.Start+lastSymbolPage-1)&^(lastSymbolPage-1) + lastSymbolPage
		} else {
			f.End = math.MaxUint64 // the top of the address space
		}
	}
	return fs, nil
}

// kallsymsLine splits "address type name [module]" without allocating:
// fields apart by spaces or tabs, the module's brackets taken off. ok is
// false for a line of fewer than three fields or a type of more than one
// letter.
func kallsymsLine(line []byte) (addr []byte, typ byte, name, module []byte, ok bool) {
	var f [4][]byte
	n := 0
	for i := 0; i < len(line) && n < len(f); {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		j := i
		for j < len(line) && line[j] != ' ' && line[j] != '\t' {
			j++
		}
		if j > i {
			f[n] = line[i:j]
			n++
		}
		i = j
	}
	if n < 3 || len(f[1]) != 1 {
		return nil, 0, nil, nil, false
	}
	return f[0], f[1][0], f[2], bytes.Trim(f[3], "[]"), true
}

// parseHex parses a kallsyms address: hexadecimal digits, at most 16.
func parseHex(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	var x uint64
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		x = x<<4 | uint64(c)
	}
	return x, true
}

// parseKallsyms builds the lookup table from kallsyms.
func parseKallsyms(r io.Reader) (*Kernel, error) {
	fs, err := ReadKallsyms(r)
	if err != nil {
		return nil, err
	}
	cs := make([]candidate, 0, len(fs))
	for _, f := range fs {
		bind := bindGlobal
		switch f.Type {
		case 'W', 'w':
			bind = bindWeak
		case 't':
			bind = bindLocal
		}
		// A module symbol's module is dropped: the name is enough to read a
		// stack and keeps names alike across modules.
		cs = append(cs, candidate{sym: sym{addr: f.Start, name: f.Name, size: f.End - f.Start}, bind: bind})
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
