package fileio

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
)

// uring is an io_uring instance of one thread: io_uring_setup, the
// submission and completion rings mapped from its fd, and io_uring_enter
// to submit and wait, as liburing does (without it). Reads and writes are
// IORING_OP_READ and IORING_OP_WRITE (Linux 5.6).
type uring struct {
	fd int
	// The rings' shared words, in the mapped memory: the kernel moves sq's
	// head and cq's tail, this thread sq's tail and cq's head.
	sqHead, sqTail, sqMask *uint32
	sqArray                []uint32
	sqes                   []uringSQE
	cqHead, cqTail, cqMask *uint32
	cqes                   []uringCQE
	maps                   [][]byte
	// queued are the SQEs written since the last submit; tail is the
	// submission tail as this thread has written it.
	queued, tail uint32
	// disabled: the ring was made disabled (single issuer), and start
	// enables it on the thread that submits.
	disabled bool
}

// uringParams is struct io_uring_params.
type uringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  struct {
		head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
		userAddr                                                        uint64
	}
	cqOff struct {
		head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
		userAddr                                                        uint64
	}
}

// uringSQE is struct io_uring_sqe (64 bytes).
type uringSQE struct {
	opcode      uint8
	flags       uint8
	ioprio      uint16
	fd          int32
	off         uint64
	addr        uint64
	len         uint32
	rwFlags     uint32
	userData    uint64
	bufIndex    uint16
	personality uint16
	spliceFdIn  int32
	addr3       uint64
	pad         uint64
}

// uringCQE is struct io_uring_cqe (16 bytes).
type uringCQE struct {
	userData uint64
	res      int32
	flags    uint32
}

const (
	uringOpRead        = 22 // IORING_OP_READ
	uringOpWrite       = 23 // IORING_OP_WRITE
	uringOffSQRing     = 0
	uringOffCQRing     = 0x8000000
	uringOffSQEs       = 0x10000000
	uringEnterGetEvent = 1 // IORING_ENTER_GETEVENTS

	uringSetupRDisabled    = 1 << 6  // IORING_SETUP_R_DISABLED (5.10)
	uringSetupCoopTaskrun  = 1 << 8  // IORING_SETUP_COOP_TASKRUN (5.19)
	uringSetupSingleIssuer = 1 << 12 // IORING_SETUP_SINGLE_ISSUER (6.0)
	uringSetupDeferTaskrun = 1 << 13 // IORING_SETUP_DEFER_TASKRUN (6.1)
	uringRegisterEnable    = 12      // IORING_REGISTER_ENABLE_RINGS
)

// uringFlags are the setup flags fio's io_uring engine asks for (and drops
// on a kernel that refuses them): one thread submits and reaps (single
// issuer), and completions run when it waits for them (deferred task
// work) rather than interrupting it (cooperative task work). A single
// issuer is the thread that makes the ring unless the ring starts
// disabled; a benchmark thread's ring is made before its thread runs, so
// it starts disabled and the thread enables it (start).
const uringFlags = uringSetupCoopTaskrun | uringSetupSingleIssuer | uringSetupDeferTaskrun | uringSetupRDisabled

func newUring(depth int) (_ *uring, err error) {
	p := uringParams{flags: uringFlags}
	fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(depth), uintptr(unsafe.Pointer(&p)), 0)
	if e == unix.EINVAL { // a kernel older than 6.1
		p = uringParams{}
		fd, _, e = unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(depth), uintptr(unsafe.Pointer(&p)), 0)
	}
	if e != 0 {
		return nil, uringUnavailable(e)
	}
	u := &uring{fd: int(fd), disabled: p.flags&uringSetupRDisabled != 0}
	defer func() {
		if err != nil {
			u.close()
		}
	}()
	sqSize := int(p.sqOff.array + p.sqEntries*4)
	cqSize := int(p.cqOff.cqes + p.cqEntries*uint32(unsafe.Sizeof(uringCQE{})))
	sq, err := u.mmap(uringOffSQRing, sqSize)
	if err != nil {
		return nil, err
	}
	cq, err := u.mmap(uringOffCQRing, cqSize)
	if err != nil {
		return nil, err
	}
	sqeMem, err := u.mmap(uringOffSQEs, int(p.sqEntries)*int(unsafe.Sizeof(uringSQE{})))
	if err != nil {
		return nil, err
	}
	word := func(m []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&m[off])) }
	u.sqHead, u.sqTail, u.sqMask = word(sq, p.sqOff.head), word(sq, p.sqOff.tail), word(sq, p.sqOff.ringMask)
	u.sqArray = unsafe.Slice(word(sq, p.sqOff.array), p.sqEntries)
	u.sqes = unsafe.Slice((*uringSQE)(unsafe.Pointer(&sqeMem[0])), p.sqEntries)
	u.cqHead, u.cqTail, u.cqMask = word(cq, p.cqOff.head), word(cq, p.cqOff.tail), word(cq, p.cqOff.ringMask)
	u.cqes = unsafe.Slice((*uringCQE)(unsafe.Pointer(&cq[p.cqOff.cqes])), p.cqEntries)
	u.tail = atomic.LoadUint32(u.sqTail)
	return u, nil
}

// uringUnavailable says why io_uring_setup failed and what to use instead.
func uringUnavailable(e unix.Errno) error {
	why := ""
	switch e {
	case unix.ENOSYS:
		why = ": this kernel has no io_uring, or a seccomp filter (a container's) refuses it"
	case unix.EPERM:
		why = ": io_uring is disabled"
		if v := sysinfo.ReadString("/proc/sys/kernel/io_uring_disabled"); v != "" && v != "0" {
			why += fmt.Sprintf(" (kernel.io_uring_disabled is %s)", v)
		} else {
			why += " (by a seccomp filter or a security module)"
		}
	case unix.ENOMEM:
		why = ": the locked-memory limit (ulimit -l) is too small for the rings"
	}
	return fmt.Errorf("io_uring_setup: %s%s: use --ioengine libaio (for O_DIRECT IO) or psync", errnoText(e), why)
}

func (u *uring) mmap(off int64, size int) ([]byte, error) {
	m, err := unix.Mmap(u.fd, off, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("map the io_uring rings: %s", errnoText(err))
	}
	u.maps = append(u.maps, m)
	return m, nil
}

// start enables a ring made disabled, on the thread that will submit.
func (u *uring) start() error {
	if !u.disabled {
		return nil
	}
	if _, _, e := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(u.fd), uringRegisterEnable, 0, 0, 0, 0); e != 0 {
		return fmt.Errorf("io_uring_register (enable the ring): %s", errnoText(e))
	}
	u.disabled = false
	return nil
}

func (u *uring) prep(slot int, write bool, fd int, buf []byte, off int64) {
	i := u.tail & *u.sqMask
	sqe := &u.sqes[i]
	*sqe = uringSQE{opcode: uringOpRead, fd: int32(fd), off: uint64(off), addr: uint64(uintptr(unsafe.Pointer(&buf[0]))), len: uint32(len(buf)), userData: uint64(slot)}
	if write {
		sqe.opcode = uringOpWrite
	}
	u.sqArray[i] = i
	u.tail++
	u.queued++
}

func (u *uring) submit() (int, error) {
	if u.queued == 0 {
		return 0, nil
	}
	// The SQEs are written before the tail that hands them over.
	atomic.StoreUint32(u.sqTail, u.tail)
	for {
		n, _, e := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(u.fd), uintptr(u.queued), 0, 0, 0, 0)
		switch e {
		case 0:
			u.queued -= uint32(n)
			return int(n), nil
		case unix.EINTR:
			continue
		case unix.EAGAIN, unix.EBUSY:
			return 0, nil // the caller reaps and comes back
		}
		return 0, fmt.Errorf("io_uring_enter: %s", errnoText(e))
	}
}

func (u *uring) reap(least int, out []completion) (int, error) {
	for {
		head, tail := *u.cqHead, atomic.LoadUint32(u.cqTail)
		if int(tail-head) >= least || least == 0 {
			n := 0
			for ; head != tail && n < len(out); head++ {
				c := &u.cqes[head&*u.cqMask]
				out[n] = completion{slot: int(c.userData), res: int64(c.res)}
				n++
			}
			// The entries are read before the head that frees them.
			atomic.StoreUint32(u.cqHead, head)
			return n, nil
		}
		_, _, e := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(u.fd), 0, uintptr(least-int(tail-head)), uringEnterGetEvent, 0, 0)
		if e != 0 && e != unix.EINTR {
			return 0, fmt.Errorf("io_uring_enter (wait): %s", errnoText(e))
		}
	}
}

func (u *uring) close() {
	for _, m := range u.maps {
		unix.Munmap(m)
	}
	u.maps = nil
	if u.fd > 0 {
		unix.Close(u.fd)
		u.fd = -1
	}
}
