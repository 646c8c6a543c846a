package sqlprobe

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/prometheus/procfs"
)

// Find returns the SQLite libraries to hook for the processes pids: every
// executable file they map that defines SQLite's API, and the system's
// libsqlite3.so.0 (ldconfig's) even where none maps it yet, since python's
// `import sqlite3` loads it after the process has started. A uprobe
// belongs to the file, so a process that maps it later is covered too.
// notes say what was left out and why (a stripped program, an unreadable
// mapping).
func Find(pids []int) (libs []*Library, notes []string) {
	seen := map[string]bool{} // by device:inode, or path
	add := func(path, key string) {
		if seen[key] {
			return
		}
		seen[key] = true
		lib, err := Inspect(path)
		switch {
		case err == nil:
			libs = append(libs, lib)
		case errors.Is(err, ErrNoSQLite):
		default:
			notes = append(notes, err.Error())
		}
	}
	if p := systemLibrary(); p != "" {
		if fi, err := os.Stat(p); err == nil {
			add(p, fileKey(fi))
		}
	}
	for _, pid := range pids {
		proc, err := procfs.NewProc(pid)
		if err != nil {
			continue // gone
		}
		maps, err := proc.ProcMaps()
		if err != nil {
			notes = append(notes, fmt.Sprintf("pid %d: read its mappings: %v", pid, err))
			continue
		}
		for _, m := range maps {
			if !m.Perms.Execute || !strings.HasPrefix(m.Pathname, "/") {
				continue
			}
			// Through the process's root, so a program in a container is
			// found in its own file system.
			path := filepath.Join(fmt.Sprintf("/proc/%d/root", pid), m.Pathname)
			add(path, fmt.Sprintf("%d:%d", m.Dev, m.Inode))
		}
	}
	return libs, notes
}

// fileKey is fi's device:inode as /proc/PID/maps gives it.
func fileKey(fi os.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf("%d:%d", st.Dev, st.Ino)
	}
	return fi.Name()
}

// systemLibrary is the file ldconfig's cache names for libsqlite3.so.0 on
// this machine's word size, "" if none.
func systemLibrary() string {
	out, err := exec.Command("ldconfig", "-p").Output()
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		// "	libsqlite3.so.0 (libc6,x86-64) => /lib/x86_64-linux-gnu/libsqlite3.so.0"
		line := strings.TrimSpace(sc.Text())
		name, rest, ok := strings.Cut(line, " ")
		if !ok || name != "libsqlite3.so.0" {
			continue
		}
		if !strings.Contains(rest, "64") { // (libc6) alone is a 32-bit library
			continue
		}
		if _, path, ok := strings.Cut(rest, "=> "); ok {
			return strings.TrimSpace(path)
		}
	}
	return ""
}
