// Package sqlprobe finds the SQLite library a workload runs, and what the
// statement probe needs to know of it, before anything is attached: which
// of SQLite's API functions it defines, and where a prepared statement
// keeps its SQL text and a connection its autocommit flag.
//
// The two offsets are not in any header SQLite installs and change with
// its version and compile options (struct Vdbe's fields in front of zSql
// moved in 12 of the releases from 3.20 to 3.53), and Debian ships no BTF
// or DWARF for it. SQLite's own accessors hold them: sqlite3_sql(p) is
// `return p ? p->zSql : 0` and sqlite3_get_autocommit(db) is
// `return db->autoCommit`, so the offsets are read from the first
// instructions of those two functions in the very file that is traced.
// A build they do not decode (another instruction set, SQLITE_ENABLE_API_ARMOR's
// safety check first) gives no offset, and the probe says so.
package sqlprobe

import (
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// API is the functions the statement probe hooks, at their entry.
var API = []string{
	"sqlite3_prepare_v2", "sqlite3_prepare_v3", "sqlite3_prepare",
	"sqlite3_step", "sqlite3_reset", "sqlite3_finalize",
	"sqlite3_wal_checkpoint_v2", "sqlite3_close", "sqlite3_close_v2",
}

// Engines a Library is.
const (
	EngineSQLite   = "sqlite"
	EnginePostgres = "postgres"
)

// pgActivity is the PostgreSQL server's function every backend calls with
// the statement it starts (exported, so in a stripped binary's dynamic
// symbols too).
const pgActivity = "pgstat_report_activity"

// pgLockSleep is where a PostgreSQL backend waits for a heavyweight lock
// (exported too).
const pgLockSleep = "ProcSleep"

// pgExecStart and pgExecEnd begin and end every plan's execution: the
// standard ones, which ExecutorStart and ExecutorEnd call directly or
// through an extension's hook (exported for those). A statement nested in
// the backend's (a function's) is told by its text.
const (
	pgExecStart = "standard_ExecutorStart"
	pgExecEnd   = "standard_ExecutorEnd"
)

// Library is an ELF file that defines SQLite's API (libsqlite3, or a
// program or module with SQLite linked in), or a PostgreSQL server.
type Library struct {
	Path    string
	Engine  string // EngineSQLite or EnginePostgres
	BuildID string // hex, "" if the file has none
	// Symbols are the API functions the file defines, by name: their
	// addresses as the symbol table gives them; FileOffsets where their
	// code is in the file, which is what a uprobe is attached at.
	Symbols, FileOffsets map[string]uint64
	// SQLOffset is the offset of zSql in struct Vdbe, AutoCommitOffset
	// that of autoCommit in struct sqlite3; -1 where the accessor did not
	// decode (OffsetsNote says why).
	SQLOffset, AutoCommitOffset int64
	OffsetsNote                 string
}

// ErrNoSQLite is Inspect's error for an ELF file with neither SQLite's
// sqlite3_step nor PostgreSQL's pgstat_report_activity.
var ErrNoSQLite = errors.New("no SQLite or PostgreSQL in it (neither sqlite3_step nor pgstat_report_activity is defined)")

// Inspect reads path's symbols and SQLite's offsets from it.
func Inspect(path string) (*Library, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	syms := defined(f)
	if _, ok := syms[pgActivity]; !ok && isPostgres(path) {
		// A server built without its functions in the dynamic symbols:
		// its debug file (a -dbgsym package's, by build id) has them,
		// at the same addresses.
		if d := debugFile(path, buildID(f)); d != "" {
			if df, err := elf.Open(d); err == nil {
				for name, a := range defined(df) {
					if _, ok := syms[name]; !ok {
						syms[name] = a
					}
				}
				df.Close()
			}
		}
	}
	if _, ok := syms[pgActivity]; ok {
		// A PostgreSQL server: its statements come as text in the
		// activity report, no offsets needed.
		lib := &Library{Path: path, BuildID: buildID(f), Engine: EnginePostgres, Symbols: map[string]uint64{pgActivity: syms[pgActivity]},
			FileOffsets: map[string]uint64{}, SQLOffset: -1, AutoCommitOffset: -1}
		for _, name := range []string{pgActivity, pgLockSleep, pgExecStart, pgExecEnd} {
			a, ok := syms[name]
			if !ok {
				continue
			}
			lib.Symbols[name] = a
			if p := segment(f, a); p != nil {
				lib.FileOffsets[name] = a - p.Vaddr + p.Off
			}
		}
		return lib, nil
	}
	if _, ok := syms["sqlite3_step"]; !ok {
		if isPostgres(path) {
			return nil, fmt.Errorf("%s: a PostgreSQL server without the symbol %s (nor a debug file for build id %q under /usr/lib/debug/.build-id): its statements are not named; install its debug symbols (Debian: postgresql-NN-dbgsym; or fetch them with debuginfod-find debuginfo %s into that directory)", path, pgActivity, buildID(f), path)
		}
		for name := range syms {
			if strings.HasSuffix(name, ".Xsqlite3_step") {
				return nil, fmt.Errorf("%s: SQLite translated to Go (%s): it has no C API to hook, so its statements are not named (a Go program on mattn/go-sqlite3, real SQLite through cgo, is)", path, strings.TrimSuffix(name, ".Xsqlite3_step"))
			}
		}
		return nil, fmt.Errorf("%s: %w", path, ErrNoSQLite)
	}
	lib := &Library{Path: path, BuildID: buildID(f), Engine: EngineSQLite, Symbols: map[string]uint64{}, FileOffsets: map[string]uint64{},
		SQLOffset: -1, AutoCommitOffset: -1}
	for _, name := range API {
		if a, ok := syms[name]; ok {
			lib.Symbols[name] = a
			if p := segment(f, a); p != nil {
				lib.FileOffsets[name] = a - p.Vaddr + p.Off
			}
		}
	}
	if f.Machine != elf.EM_X86_64 {
		lib.OffsetsNote = fmt.Sprintf("statement offsets are decoded on x86-64 only, not %s", f.Machine)
		return lib, nil
	}
	var notes []string
	for _, a := range []struct {
		sym  string
		want byte // the opcode bytes' last: 0x8b for a 64-bit mov, 0xb6 for movzbl
		dst  *int64
	}{
		{"sqlite3_sql", 0x8b, &lib.SQLOffset},
		{"sqlite3_get_autocommit", 0xb6, &lib.AutoCommitOffset},
	} {
		code, err := funcBytes(f, syms, a.sym, 32)
		if err == nil {
			var off int64
			if off, err = loadOffset(code, a.want); err == nil {
				*a.dst = off
				continue
			}
		}
		notes = append(notes, fmt.Sprintf("%s: %v", a.sym, err))
	}
	if len(notes) > 0 {
		lib.OffsetsNote = fmt.Sprintf("statement offsets unknown (%s)", joinNotes(notes))
	}
	return lib, nil
}

func joinNotes(n []string) string {
	s := n[0]
	for _, x := range n[1:] {
		s += "; " + x
	}
	return s
}

// defined is the functions f defines, from its dynamic symbols and (when
// not stripped) its full symbol table: a program with SQLite linked in
// statically has it in the latter only.
func defined(f *elf.File) map[string]uint64 {
	out := map[string]uint64{}
	for _, list := range []func() ([]elf.Symbol, error){f.DynamicSymbols, f.Symbols} {
		syms, err := list()
		if err != nil {
			continue
		}
		for _, s := range syms {
			if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Section != elf.SHN_UNDEF && s.Value != 0 {
				if _, ok := out[s.Name]; !ok {
					out[s.Name] = s.Value
				}
			}
		}
	}
	return out
}

// funcBytes reads the first n bytes of the function sym.
func funcBytes(f *elf.File, syms map[string]uint64, sym string, n int) ([]byte, error) {
	addr, ok := syms[sym]
	if !ok {
		return nil, errors.New("not defined")
	}
	p := segment(f, addr)
	if p == nil {
		return nil, fmt.Errorf("address %#x is in no executable segment", addr)
	}
	b := make([]byte, min(uint64(n), p.Vaddr+p.Filesz-addr))
	if _, err := p.ReadAt(b, int64(addr-p.Vaddr)); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read its code: %w", err)
	}
	return b, nil
}

// segment is the executable loaded segment that holds addr, nil if none.
func segment(f *elf.File, addr uint64) *elf.Prog {
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && addr >= p.Vaddr && addr < p.Vaddr+p.Filesz {
			return p
		}
	}
	return nil
}

// loadOffset decodes an accessor that returns one field of its first
// argument (%rdi): an optional endbr64, an optional NULL test (test
// %rdi,%rdi; je), then `mov disp(%rdi),%rax` (48 8b /0, want 0x8b) or
// `movzbl disp(%rdi),%eax` (0f b6 /0, want 0xb6), with disp 0, 8 or 32
// bits. Anything else is not guessed at.
func loadOffset(code []byte, want byte) (int64, error) {
	c := code
	skip := func(p ...byte) bool {
		if len(c) >= len(p) && string(c[:len(p)]) == string(p) {
			c = c[len(p):]
			return true
		}
		return false
	}
	skip(0xf3, 0x0f, 0x1e, 0xfa) // endbr64
	if skip(0x48, 0x85, 0xff) {  // test %rdi,%rdi
		if !skip(0x74) || len(c) < 1 { // je rel8
			if !skip(0x0f, 0x84) || len(c) < 4 { // je rel32
				return 0, errors.New("a NULL test not followed by a jump")
			}
			c = c[4:]
		} else {
			c = c[1:]
		}
	}
	var prefix []byte
	switch want {
	case 0x8b:
		prefix = []byte{0x48, 0x8b}
	case 0xb6:
		prefix = []byte{0x0f, 0xb6}
	}
	if !skip(prefix...) || len(c) < 1 {
		return 0, fmt.Errorf("its code does not begin with a load from the first argument (% x)", code[:min(len(code), 12)])
	}
	modrm := c[0]
	if modrm&0x38 != 0 || modrm&0x07 != 0x07 { // reg = rax, rm = rdi
		return 0, fmt.Errorf("its load is not from (%%rdi) into %%rax (ModRM %#x)", modrm)
	}
	c = c[1:]
	switch modrm >> 6 {
	case 0:
		return 0, nil
	case 1:
		if len(c) < 1 {
			break
		}
		return int64(int8(c[0])), nil
	case 2:
		if len(c) < 4 {
			break
		}
		return int64(int32(binary.LittleEndian.Uint32(c))), nil
	}
	return 0, fmt.Errorf("its load's displacement does not decode (ModRM %#x)", modrm)
}

// buildID is the GNU build-id note of f, in hex.
// isPostgres says whether path is a PostgreSQL server, by its name.
func isPostgres(path string) bool {
	b := filepath.Base(path)
	return b == "postgres" || b == "postmaster"
}

// debugFile is the separate debug file of the file at path with build id
// id, where a -dbgsym package installs it (under the same root as path:
// a process's /proc/PID/root), "" if there is none.
func debugFile(path, id string) string {
	if len(id) < 3 {
		return ""
	}
	root := ""
	if rest, ok := strings.CutPrefix(path, "/proc/"); ok {
		if pid, _, ok := strings.Cut(rest, "/root/"); ok {
			root = "/proc/" + pid + "/root"
		}
	}
	d := filepath.Join(root, "/usr/lib/debug/.build-id", id[:2], id[2:]+".debug")
	if _, err := os.Stat(d); err != nil {
		return ""
	}
	return d
}

func buildID(f *elf.File) string {
	s := f.Section(".note.gnu.build-id")
	if s == nil {
		return ""
	}
	b, err := s.Data()
	if err != nil || len(b) < 16 {
		return ""
	}
	nameSz, descSz := binary.LittleEndian.Uint32(b[0:4]), binary.LittleEndian.Uint32(b[4:8])
	start := 12 + (nameSz+3)&^3
	if uint64(start)+uint64(descSz) > uint64(len(b)) {
		return ""
	}
	return hex.EncodeToString(b[start : start+descSz])
}
