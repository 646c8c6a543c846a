package symbolize

import (
	"debug/elf"
	"debug/gosym"
	"errors"
	"fmt"
	"io"
)

// elfSyms is what is kept of one ELF file: where its segments are, to turn
// a file offset into a link-time virtual address, and its functions.
type elfSyms struct {
	loads []load
	syms  table
	// data are its variables (sized objects in its data and bss
	// sections): what a lock's address in it is.
	data table
}

// load is one PT_LOAD segment: file bytes [off, off+filesz) are linked at
// vaddr.
type load struct {
	off, filesz, vaddr uint64
}

// readELF reads the segments and functions of an ELF file. Functions come
// from .symtab and from .dynsym, which is all a stripped library has left
// (Ubuntu's libc.so.6 has no .symtab), aliases in both resolved once; or,
// for a stripped Go binary, from .gopclntab.
func readELF(r io.ReaderAt) (*elfSyms, error) {
	f, err := elf.NewFile(r)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var e elfSyms
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Filesz > 0 {
			e.loads = append(e.loads, load{off: p.Off, filesz: p.Filesz, vaddr: p.Vaddr})
		}
	}
	if len(e.loads) == 0 {
		return nil, errors.New("no loadable segments")
	}
	var cs, ds []candidate
	for _, read := range []func() ([]elf.Symbol, error){f.Symbols, f.DynamicSymbols} {
		syms, err := read()
		if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
			return nil, fmt.Errorf("symbols: %w", err)
		}
		for _, s := range syms {
			if c, ok := function(f, s); ok {
				cs = append(cs, c)
			} else if d, ok := variable(f, s); ok {
				ds = append(ds, d)
			}
		}
	}
	e.data = buildTable(ds)
	if len(cs) == 0 {
		// A Go binary linked with -s (as go run and go test link, and many
		// release builds) has no .symtab, but it keeps the runtime's own
		// function table.
		if cs, err = goFunctions(f); err != nil {
			return nil, err
		}
	}
	e.syms = buildTable(cs)
	return &e, nil
}

// goFunctions reads the functions of a Go binary from .gopclntab, the table
// the runtime uses for tracebacks; nil when there is none.
func goFunctions(f *elf.File) ([]candidate, error) {
	pcln, text := f.Section(".gopclntab"), f.Section(".text")
	if pcln == nil || text == nil {
		return nil, nil
	}
	data, err := pcln.Data()
	if err != nil {
		return nil, fmt.Errorf(".gopclntab: %w", err)
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, text.Addr))
	if err != nil {
		return nil, fmt.Errorf(".gopclntab: %w", err)
	}
	cs := make([]candidate, 0, len(tab.Funcs))
	for _, fn := range tab.Funcs {
		if fn.End > fn.Entry {
			cs = append(cs, candidate{sym: sym{addr: fn.Entry, size: fn.End - fn.Entry, name: fn.Name}})
		}
	}
	return cs, nil
}

// function keeps the symbols that name code: functions (and GNU indirect
// functions) in an executable section, and sized untyped symbols there,
// which is how assembly routines without .type appear.
func function(f *elf.File, s elf.Symbol) (candidate, bool) {
	if s.Name == "" || s.Section == elf.SHN_UNDEF || s.Section >= elf.SHN_LORESERVE ||
		int(s.Section) >= len(f.Sections) {
		return candidate{}, false
	}
	sec := f.Sections[s.Section]
	if sec.Flags&elf.SHF_EXECINSTR == 0 {
		return candidate{}, false
	}
	switch elf.ST_TYPE(s.Info) {
	case elf.STT_FUNC, elf.STT_GNU_IFUNC:
	case elf.STT_NOTYPE:
		if s.Size == 0 {
			return candidate{}, false // labels, section markers
		}
	default:
		return candidate{}, false
	}
	return candidate{
		sym:   sym{addr: s.Value, size: s.Size, name: s.Name},
		bind:  bindOf(s),
		limit: sec.Addr + sec.Size,
	}, true
}

// bindOf ranks a symbol's binding (better).
func bindOf(s elf.Symbol) int {
	switch elf.ST_BIND(s.Info) {
	case elf.STB_GLOBAL:
		return bindGlobal
	case elf.STB_WEAK:
		return bindWeak
	}
	return bindLocal
}

// variable keeps the symbols that name data: sized objects in an allocated
// section that is not code (.data, .bss).
func variable(f *elf.File, s elf.Symbol) (candidate, bool) {
	if s.Name == "" || s.Size == 0 || elf.ST_TYPE(s.Info) != elf.STT_OBJECT || s.Section == elf.SHN_UNDEF ||
		s.Section >= elf.SHN_LORESERVE || int(s.Section) >= len(f.Sections) {
		return candidate{}, false
	}
	sec := f.Sections[s.Section]
	if sec.Flags&elf.SHF_ALLOC == 0 || sec.Flags&elf.SHF_EXECINSTR != 0 {
		return candidate{}, false
	}
	return candidate{sym: sym{addr: s.Value, size: s.Size, name: s.Name}, bind: bindOf(s)}, true
}

// vaddr turns a file offset into the virtual address the file was linked
// for: the address its symbols use, whether the file is a non-PIE
// executable (linked at its load address), a PIE or a shared library.
func (e *elfSyms) vaddr(off uint64) (uint64, bool) {
	for _, l := range e.loads {
		if off >= l.off && off-l.off < l.filesz {
			return off - l.off + l.vaddr, true
		}
	}
	return 0, false
}
