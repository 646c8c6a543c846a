// Package runfile keeps the small files that perfsleuth processes running
// at once share under /run/perfsleuth: which of them need
// kernel.task_delayacct on (internal/delayacct), and which ran when
// (internal/instances). Each is read and rewritten whole under an
// exclusive file lock, and removed, with the directory when it is empty,
// when it holds nothing. /run is a tmpfs: a file left by a perfsleuth
// killed outright goes at the next boot, and its users drop the processes
// in it that no longer run.
package runfile

import (
	"io"
	"os"
	"path/filepath"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// Dir is where the shared files are.
const Dir = "/run/perfsleuth"

// With runs fn on the content of the file at path under an exclusive lock
// and writes back what fn returns; an empty result removes the file, and
// its directory when nothing else is in it. A file that does not exist
// reads empty.
func With(path string, fn func([]byte) []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return err
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
			f.Close()
			return err
		}
		// Another process may have removed the file between the open and
		// the lock: then lock the one at path now.
		var held, now unix.Stat_t
		if unix.Fstat(int(f.Fd()), &held) != nil || unix.Stat(path, &now) != nil || held.Ino != now.Ino || held.Dev != now.Dev {
			f.Close()
			continue
		}
		err = rewrite(f, path, fn)
		f.Close() // unlocks
		return err
	}
}

func rewrite(f *os.File, path string, fn func([]byte) []byte) error {
	b, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	out := fn(b)
	if len(out) == 0 {
		os.Remove(path)
		os.Remove(filepath.Dir(path)) // fails while another file is there
		return nil
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err = f.WriteAt(out, 0)
	return err
}

// StartTime is a process's start time (clock ticks after boot, field 22 of
// /proc/PID/stat), 0 when it does not run: with the pid, it tells the
// process from another given the same pid later.
func StartTime(pid int) uint64 {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0
	}
	st, err := p.Stat()
	if err != nil {
		return 0
	}
	return st.Starttime
}

// Running says whether the process pid started at start still runs.
func Running(pid int, start uint64) bool {
	return start != 0 && StartTime(pid) == start
}
