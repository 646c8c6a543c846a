package symbolize

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// User resolves user-space addresses to function names. It caches the
// symbols of each ELF file it reads, keyed by the file's identity, so the
// libraries that many processes share are read once. It is safe for
// concurrent use.
type User struct {
	mu     sync.Mutex
	files  map[fileKey]*elfSyms
	failed map[failKey]error
}

// fileKey identifies a mapped file: the path alone could name different
// files in different containers or before and after an upgrade.
type fileKey struct {
	path       string
	dev, inode uint64
}

// failKey remembers a file that could not be read for one process, so a
// report with many frames in it does not retry it for every frame; another
// process (one still alive, say) may still get it.
type failKey struct {
	fileKey
	pid int
}

// NewUser returns a user-space symboliser with an empty cache.
func NewUser() *User {
	return &User{files: map[fileKey]*elfSyms{}, failed: map[failKey]error{}}
}

// Symbol returns "function+0xoffset (file)" for an address of the process
// whose mappings m holds, file being the base name of the mapped file:
// "sqlite3_step+0x1a (libsqlite3.so.0.8.6)". When no function is known (a
// stripped file, or one that can no longer be read) it returns
// "0x7f... (file)", and the address in hex alone when no mapping holds it.
//
// Every user frame but the innermost is a return address, one instruction
// past the call; a call that is the last instruction of a function (to a
// noreturn function) returns into the next one. Callers that care pass
// addr-1 for those frames.
func (u *User) Symbol(m *Maps, addr uint64) string {
	mp := m.find(addr)
	if mp == nil {
		return hex(addr)
	}
	file := filepath.Base(mp.Path)
	if mp.Inode != 0 { // not kernel-provided code such as [vdso]
		if e := u.load(m.Pid, mp); e != nil {
			if v, ok := e.vaddr(addr - mp.Start + mp.Offset); ok {
				if name, off, ok := e.syms.lookup(v); ok {
					return withOffset(name, off) + " (" + file + ")"
				}
			}
		}
	}
	return hex(addr) + " (" + file + ")"
}

// Data returns "variable+0xoffset (file)" for a data address of the
// process whose mappings m holds (a lock's, say), from the variables of the
// files it maps: all the segments of a file are loaded at one offset from
// their link addresses, which its code mappings give, so a variable in its
// .data or .bss is found without a mapping of its own. "" when no file's
// variable holds addr (the heap, a stack, a stripped file).
func (u *User) Data(m *Maps, addr uint64) string {
	seen := map[string]bool{}
	for i := range m.Mappings {
		mp := &m.Mappings[i]
		if mp.Inode == 0 || seen[mp.Path] {
			continue
		}
		seen[mp.Path] = true
		e := u.load(m.Pid, mp)
		if e == nil {
			continue
		}
		linked, ok := e.vaddr(mp.Offset)
		if !ok {
			continue
		}
		// Unsigned: an address below the file's wraps past every variable.
		if name, off, ok := e.data.lookup(addr - mp.Start + linked); ok {
			return withOffset(name, off) + " (" + filepath.Base(mp.Path) + ")"
		}
	}
	return ""
}

// load returns the symbols of the file behind mp, reading it on first use,
// or nil when it cannot be read.
func (u *User) load(pid int, mp *Mapping) *elfSyms {
	key := fileKey{path: mp.Path, dev: mp.Dev, inode: mp.Inode}
	u.mu.Lock()
	defer u.mu.Unlock()
	if e, ok := u.files[key]; ok {
		return e
	}
	if _, ok := u.failed[failKey{key, pid}]; ok {
		return nil
	}
	e, err := readMapped(pid, mp)
	if err != nil {
		u.failed[failKey{key, pid}] = err
		return nil
	}
	u.files[key] = e
	return e
}

// Unreadable returns why each file that [User.Symbol] could not read was
// unreadable, one error per file and process, so a report can say why
// frames in it have no names.
func (u *User) Unreadable() []error {
	u.mu.Lock()
	defer u.mu.Unlock()
	keys := make([]failKey, 0, len(u.failed))
	for k := range u.failed {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b failKey) int {
		if c := strings.Compare(a.path, b.path); c != 0 {
			return c
		}
		return cmp.Compare(a.pid, b.pid)
	})
	errs := make([]error, len(keys))
	for i, k := range keys {
		errs[i] = u.failed[k]
	}
	return errs
}

// readMapped reads the file behind mapping mp of process pid.
func readMapped(pid int, mp *Mapping) (*elfSyms, error) {
	f, err := openMapped(pid, mp)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	e, err := readELF(f)
	if err != nil {
		return nil, fmt.Errorf("elf %s: %w", f.Name(), err)
	}
	return e, nil
}

// openMapped opens the file that mp maps, checking that it is that file
// (same device and inode): by the time of the report the path may name
// another file (the mapped one was replaced, or the process runs in a
// container and the host has its own file at that path). In order:
//   - the path itself, then the path in the process's root
//     (/proc/PID/root/path: containers), if they are the mapped file;
//   - /proc/PID/map_files/START-END, the mapping itself, which reaches a
//     deleted file too but needs a live process and CAP_SYS_ADMIN (or
//     CAP_CHECKPOINT_RESTORE);
//   - either path with the same inode on another device: overlayfs and
//     btrfs subvolumes report one device in maps and another to stat.
func openMapped(pid int, mp *Mapping) (*os.File, error) {
	proc := "/proc/" + strconv.Itoa(pid)
	var fallback *os.File
	for _, p := range []string{mp.Path, proc + "/root" + mp.Path} {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err != nil || st.Ino != mp.Inode {
			f.Close()
			continue
		}
		if st.Dev == mp.Dev {
			if fallback != nil {
				fallback.Close()
			}
			return f, nil
		}
		if fallback == nil {
			fallback = f
		} else {
			f.Close()
		}
	}
	f, err := os.Open(fmt.Sprintf("%s/map_files/%x-%x", proc, mp.Start, mp.End))
	if err == nil {
		if fallback != nil {
			fallback.Close()
		}
		return f, nil
	}
	if fallback != nil {
		return fallback, nil
	}
	return nil, fmt.Errorf("open %s of pid %d: no file with inode %d (process gone, or map_files needs CAP_SYS_ADMIN)",
		mp.Path, pid, mp.Inode)
}
