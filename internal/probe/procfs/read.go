package procfs

import (
	"bytes"
	"errors"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// reader reads small /proc files and directories into reused buffers, so a
// sample costs syscalls and little garbage.
type reader struct {
	buf  []byte
	dent []byte
	path []byte
}

func newReader() *reader {
	return &reader{buf: make([]byte, 4096), dent: make([]byte, 16384), path: make([]byte, 0, 128)}
}

// join builds root/a/b... with integers formatted in place.
func (r *reader) join(root string, parts ...any) string {
	p := append(r.path[:0], root...)
	for _, part := range parts {
		p = append(p, '/')
		switch v := part.(type) {
		case int:
			p = strconv.AppendInt(p, int64(v), 10)
		case string:
			p = append(p, v...)
		}
	}
	r.path = p
	return string(p)
}

// readFile returns the file's contents in r.buf (valid until the next read).
func (r *reader) readFile(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	n := 0
	for {
		if n == len(r.buf) {
			r.buf = append(r.buf, make([]byte, len(r.buf))...)
		}
		m, err := unix.Read(fd, r.buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if m == 0 {
			return r.buf[:n], nil
		}
		n += m
		if n < len(r.buf) {
			// A short read is the end: stat, status and io are single_open
			// seq files, generated whole by the first read; this saves
			// the read that would return 0, a third of the syscalls.
			return r.buf[:n], nil
		}
	}
}

// numericEntries calls fn for every all-digit name in dir (PIDs in /proc,
// TIDs in /proc/PID/task), parsing getdents64 records without allocating.
func (r *reader) numericEntries(dir string, fn func(int)) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	for {
		n, err := unix.Getdents(fd, r.dent)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n <= 0 {
			return nil
		}
		// struct linux_dirent64 { u64 d_ino; s64 d_off; u16 d_reclen; u8 d_type; char d_name[]; }
		for off := 0; off+19 <= n; {
			reclen := int(*(*uint16)(unsafe.Pointer(&r.dent[off+16])))
			if reclen == 0 || off+reclen > n {
				break
			}
			name := r.dent[off+19 : off+reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if id, ok := atoi(name); ok {
				fn(id)
			}
			off += reclen
		}
	}
}

func atoi(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func atou(b []byte) uint64 {
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + uint64(c-'0')
	}
	return n
}

// taskStat is what the sampler needs from /proc/PID/stat or
// /proc/PID/task/TID/stat (proc(5) numbers the fields from 1).
type taskStat struct {
	comm   []byte // field 2, aliases the read buffer
	ppid   int    // field 4
	utime  uint64 // field 14, clock ticks
	stime  uint64 // 15
	cutime uint64 // 16: waited-for children, recursively
	cstime uint64 // 17
	start  uint64 // 22: clock ticks after boot
	blkio  uint64 // 42: delayacct_blkio_ticks, per task
}

var errStatFormat = errors.New("unexpected stat format")

// parseStat parses a stat line. procfs's ProcStat reader does the same with
// fmt.Fscan, which costs ~20 µs per file here, three times the read itself;
// the tree walk parses every new process's stat and every thread's, each
// interval, so the few fields needed are taken by hand.
func parseStat(b []byte) (taskStat, error) {
	var s taskStat
	l := bytes.IndexByte(b, '(')
	r := bytes.LastIndexByte(b, ')')
	if l < 0 || r < l || r+2 > len(b) {
		return s, errStatFormat
	}
	s.comm = b[l+1 : r]
	field := 3
	rest := b[r+2:]
	for len(rest) > 0 && field <= 42 {
		end := bytes.IndexByte(rest, ' ')
		tok := rest
		if end >= 0 {
			tok = rest[:end]
			rest = rest[end+1:]
		} else {
			rest = nil
		}
		switch field {
		case 4:
			v, _ := atoi(tok)
			s.ppid = v
		case 14:
			s.utime = atou(tok)
		case 15:
			s.stime = atou(tok)
		case 16:
			s.cutime = atou(tok) // a long in the kernel, never negative
		case 17:
			s.cstime = atou(tok)
		case 22:
			s.start = atou(tok)
		case 42:
			s.blkio = atou(tok)
		}
		field++
	}
	if field <= 22 {
		return s, errStatFormat
	}
	return s, nil
}

var (
	volKey   = []byte("\nvoluntary_ctxt_switches:")
	involKey = []byte("\nnonvoluntary_ctxt_switches:")
)

// parseCtxSwitches takes the two context-switch counters from a status file.
func parseCtxSwitches(b []byte) (vol, invol uint64, ok bool) {
	i := bytes.Index(b, volKey)
	j := bytes.Index(b, involKey)
	if i < 0 || j < 0 {
		return 0, 0, false
	}
	return atou(bytes.TrimLeft(b[i+len(volKey):], " \t")), atou(bytes.TrimLeft(b[j+len(involKey):], " \t")), true
}

// parseSchedstat takes the first two fields of /proc/PID/task/TID/schedstat:
// nanoseconds on a CPU (se.sum_exec_runtime) and waiting on a run queue
// (sched_info.run_delay). The third, the number of timeslices, is not used.
func parseSchedstat(b []byte) (onCPU, runDelay uint64, ok bool) {
	i := bytes.IndexByte(b, ' ')
	if i <= 0 || i+1 >= len(b) || b[i+1] < '0' || b[i+1] > '9' {
		return 0, 0, false
	}
	return atou(b), atou(b[i+1:]), true
}

var (
	readBytesKey  = []byte("\nread_bytes:")
	writeBytesKey = []byte("\nwrite_bytes:")
	cancelledKey  = []byte("\ncancelled_write_bytes:")
)

// parseBlockIO takes the block-layer byte counts from a /proc/PID/io file
// (the rchar/wchar/syscr/syscw lines are skipped).
func parseBlockIO(b []byte) (ioCounters, bool) {
	var c ioCounters
	for _, f := range []struct {
		key []byte
		dst *uint64
	}{{readBytesKey, &c.readBytes}, {writeBytesKey, &c.writeBytes}, {cancelledKey, &c.cancelled}} {
		i := bytes.Index(b, f.key)
		if i < 0 {
			return ioCounters{}, false
		}
		*f.dst = atou(bytes.TrimLeft(b[i+len(f.key):], " \t"))
	}
	return c, true
}
