package fileio

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Asynchronous engines (--ioengine libaio, io_uring): a thread keeps up to
// --iodepth reads and writes in flight, as fio's engines of those names do.
// Both are driven by raw syscalls through golang.org/x/sys/unix: the
// benchmark needs reads, writes and a wait for completions, a few hundred
// lines, and a library would add cgo (liburing, libaio) or an unmaintained
// dependency for less control over what is timed.

// asyncEngine is one thread's queue of asynchronous IO.
type asyncEngine interface {
	// start readies the engine on the thread that submits and reaps,
	// before its first request.
	start() error
	// prep queues a read (write false) or write of buf at off of fd for
	// the next submit, under slot.
	prep(slot int, write bool, fd int, buf []byte, off int64)
	// submit hands the queued requests to the kernel; it returns how many
	// it took (all, or fewer when the kernel took fewer: the rest stay
	// queued, in order).
	submit() (int, error)
	// reap waits for at least least completions and stores up to len(out).
	reap(least int, out []completion) (int, error)
	close()
}

// completion is a finished request: its slot and the kernel's result
// (bytes moved, or -errno).
type completion struct {
	slot int
	res  int64
}

// Engines, as --ioengine names them.
const (
	enginePsync  = "psync"
	engineLibaio = "libaio"
	engineUring  = "io_uring"
)

var engines = []string{enginePsync, engineLibaio, engineUring}

// newEngine opens an engine of depth slots.
func newEngine(name string, depth int) (asyncEngine, error) {
	switch name {
	case engineLibaio:
		return newLibaio(depth)
	case engineUring:
		return newUring(depth)
	}
	return nil, fmt.Errorf("ioengine %q is not asynchronous", name)
}

// libaio is Linux native AIO: io_setup, io_submit, io_getevents (what
// fio's libaio engine calls through libaio, without the library). Only
// O_DIRECT IO is asynchronous: a buffered read or write completes inside
// io_submit (Notices says so).
type libaio struct {
	ctx     uintptr
	iocbs   []iocb
	pending []*iocb // queued, not yet taken by io_submit
	events  []ioEvent
}

// iocb is struct iocb of linux/aio_abi.h on a little-endian 64-bit machine.
type iocb struct {
	data      uint64 // the slot
	key       uint32
	rwFlags   uint32
	opcode    uint16
	reqprio   int16
	fildes    uint32
	buf       uint64
	nbytes    uint64
	offset    int64
	reserved2 uint64
	flags     uint32
	resfd     uint32
}

// ioEvent is struct io_event.
type ioEvent struct {
	data uint64
	obj  uint64
	res  int64
	res2 int64
}

const (
	iocbCmdPread  = 0
	iocbCmdPwrite = 1
)

func newLibaio(depth int) (*libaio, error) {
	a := &libaio{iocbs: make([]iocb, depth), events: make([]ioEvent, depth)}
	if _, _, e := unix.Syscall(unix.SYS_IO_SETUP, uintptr(depth), uintptr(unsafe.Pointer(&a.ctx)), 0); e != 0 {
		if e == unix.EAGAIN {
			return nil, fmt.Errorf("io_setup(%d): %s: the machine's limit of AIO requests in flight (fs.aio-max-nr) is taken: lower --iodepth or --threads, or raise fs.aio-max-nr", depth, errnoText(e))
		}
		return nil, fmt.Errorf("io_setup(%d): %s", depth, errnoText(e))
	}
	return a, nil
}

func (a *libaio) prep(slot int, write bool, fd int, buf []byte, off int64) {
	cb := &a.iocbs[slot]
	*cb = iocb{data: uint64(slot), opcode: iocbCmdPread, fildes: uint32(fd), buf: uint64(uintptr(unsafe.Pointer(&buf[0]))), nbytes: uint64(len(buf)), offset: off}
	if write {
		cb.opcode = iocbCmdPwrite
	}
	a.pending = append(a.pending, cb)
}

func (a *libaio) submit() (int, error) {
	if len(a.pending) == 0 {
		return 0, nil
	}
	for {
		n, _, e := unix.Syscall(unix.SYS_IO_SUBMIT, a.ctx, uintptr(len(a.pending)), uintptr(unsafe.Pointer(&a.pending[0])))
		switch e {
		case 0:
			a.pending = a.pending[:copy(a.pending, a.pending[n:])]
			return int(n), nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return 0, nil // none taken now: the caller reaps and comes back
		}
		return 0, fmt.Errorf("io_submit: %s", errnoText(e))
	}
}

func (a *libaio) reap(least int, out []completion) (int, error) {
	most := min(len(out), len(a.events))
	for {
		n, _, e := unix.Syscall6(unix.SYS_IO_GETEVENTS, a.ctx, uintptr(least), uintptr(most), uintptr(unsafe.Pointer(&a.events[0])), 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, fmt.Errorf("io_getevents: %s", errnoText(e))
		}
		for i := range int(n) {
			out[i] = completion{slot: int(a.events[i].data), res: a.events[i].res}
		}
		return int(n), nil
	}
}

func (a *libaio) start() error { return nil }

func (a *libaio) close() {
	if a.ctx != 0 {
		unix.Syscall(unix.SYS_IO_DESTROY, a.ctx, 0, 0)
		a.ctx = 0
	}
}
