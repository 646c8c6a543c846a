package delayacct

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Task is one task's delay accounting, totals since it started, in ns
// (counts are of the delays: one per sleep, one per run-queue wait).
type Task struct {
	// Version is the kernel's struct taskstats version.
	Version uint16
	// CPUCount and CPUDelayNs: the times it waited on a run queue, and for
	// how long (sched_info.run_delay, schedstat's second field); kept
	// whether kernel.task_delayacct is on or not.
	CPUCount, CPUDelayNs uint64
	// BlkioCount and BlkioDelayNs: its sleeps in io_schedule (in_iowait),
	// from the switch-out to the wake-up.
	BlkioCount, BlkioDelayNs uint64
	// MemoryDelayNs: swap-in, reclaim (freepages), thrashing and
	// compaction, those the kernel's struct has (0 for a field it lacks).
	MemoryDelayNs uint64
	// BlkioMaxNs is the longest single block-IO delay since the task
	// started (struct version 16 and later; HasMax says it is there).
	BlkioMaxNs uint64
	HasMax     bool
}

// The struct taskstats fields read, by their offsets in x/sys's copy of
// the kernel's struct (include/uapi/linux/taskstats.h). Fields are only
// ever appended (a field is there when the kernel's struct is long enough
// to hold it), except in version 15, which inserted the delay maxima in
// the middle; version 16 moved them to the end.
var (
	offVersion    = unsafe.Offsetof(unix.Taskstats{}.Version)
	offCPUCount   = unsafe.Offsetof(unix.Taskstats{}.Cpu_count)
	offCPUDelay   = unsafe.Offsetof(unix.Taskstats{}.Cpu_delay_total)
	offBlkioCount = unsafe.Offsetof(unix.Taskstats{}.Blkio_count)
	offBlkioDelay = unsafe.Offsetof(unix.Taskstats{}.Blkio_delay_total)
	offSwapin     = unsafe.Offsetof(unix.Taskstats{}.Swapin_delay_total)
	offFreepages  = unsafe.Offsetof(unix.Taskstats{}.Freepages_delay_total)
	offThrashing  = unsafe.Offsetof(unix.Taskstats{}.Thrashing_delay_total)
	offCompact    = unsafe.Offsetof(unix.Taskstats{}.Compact_delay_total)
	offBlkioMax   = unsafe.Offsetof(unix.Taskstats{}.Blkio_delay_max)
)

// versionMidMax is the struct version whose layout differs from the
// others' (the delay maxima in the middle): not read.
const versionMidMax = 15

// ParseStats reads a struct taskstats as the kernel sent it (its own
// version's size, in host byte order).
func ParseStats(raw []byte) (Task, error) {
	u64 := func(off uintptr) (uint64, bool) {
		if uintptr(len(raw)) < off+8 {
			return 0, false
		}
		return binary.NativeEndian.Uint64(raw[off:]), true
	}
	if uintptr(len(raw)) < offBlkioDelay+8 {
		return Task{}, fmt.Errorf("struct taskstats of %d bytes: too short for the block-IO delay", len(raw))
	}
	t := Task{Version: binary.NativeEndian.Uint16(raw[offVersion:])}
	if t.Version == versionMidMax {
		return Task{}, fmt.Errorf("struct taskstats version %d has the delay maxima in the middle of its fields (moved to the end in version 16): not read", t.Version)
	}
	t.CPUCount, _ = u64(offCPUCount)
	t.CPUDelayNs, _ = u64(offCPUDelay)
	t.BlkioCount, _ = u64(offBlkioCount)
	t.BlkioDelayNs, _ = u64(offBlkioDelay)
	for _, off := range []uintptr{offSwapin, offFreepages, offThrashing, offCompact} {
		v, _ := u64(off)
		t.MemoryDelayNs += v
	}
	t.BlkioMaxNs, t.HasMax = u64(offBlkioMax)
	return t, nil
}

// parseReply finds the struct taskstats of tid in a TASKSTATS_CMD_NEW
// reply: TASKSTATS_TYPE_AGGR_PID holding TASKSTATS_TYPE_PID and
// TASKSTATS_TYPE_STATS.
func parseReply(data []byte, tid int) (Task, error) {
	ad, err := netlink.NewAttributeDecoder(data)
	if err != nil {
		return Task{}, err
	}
	var raw []byte
	pid := -1
	for ad.Next() {
		if ad.Type() != unix.TASKSTATS_TYPE_AGGR_PID {
			continue
		}
		ad.Nested(func(nad *netlink.AttributeDecoder) error {
			for nad.Next() {
				switch nad.Type() {
				case unix.TASKSTATS_TYPE_PID:
					pid = int(nad.Uint32())
				case unix.TASKSTATS_TYPE_STATS:
					raw = nad.Bytes()
				}
			}
			return nad.Err()
		})
	}
	if err := ad.Err(); err != nil {
		return Task{}, err
	}
	if raw == nil {
		return Task{}, errors.New("taskstats reply without a task's stats")
	}
	if pid != tid {
		return Task{}, fmt.Errorf("taskstats reply for task %d, asked for %d", pid, tid)
	}
	return ParseStats(raw)
}

// Client asks the kernel for tasks' delay accounting.
type Client struct {
	c      *genetlink.Conn
	family uint16
}

// Open connects to the TASKSTATS generic netlink family (CONFIG_TASKSTATS;
// asking needs CAP_NET_ADMIN: the kernel marks the command
// GENL_ADMIN_PERM).
func Open() (*Client, error) {
	c, err := genetlink.Dial(nil)
	if err != nil {
		return nil, fmt.Errorf("generic netlink: %w", err)
	}
	f, err := c.GetFamily(unix.TASKSTATS_GENL_NAME)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("taskstats family (kernel without CONFIG_TASKSTATS?): %w", err)
	}
	return &Client{c: c, family: f.ID}, nil
}

// Task returns the delay accounting of the task (thread) tid.
func (c *Client) Task(tid int) (Task, error) {
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(unix.TASKSTATS_CMD_ATTR_PID, uint32(tid))
	b, err := ae.Encode()
	if err != nil {
		return Task{}, err
	}
	msgs, err := c.c.Execute(genetlink.Message{
		Header: genetlink.Header{Command: unix.TASKSTATS_CMD_GET, Version: unix.TASKSTATS_VERSION},
		Data:   b,
	}, c.family, netlink.Request)
	if err != nil {
		return Task{}, fmt.Errorf("taskstats of task %d: %w", tid, err)
	}
	if len(msgs) == 0 {
		return Task{}, fmt.Errorf("taskstats of task %d: no reply", tid)
	}
	t, err := parseReply(msgs[0].Data, tid)
	if err != nil {
		return Task{}, fmt.Errorf("taskstats of task %d: %w", tid, err)
	}
	return t, nil
}

// Close closes the connection.
func (c *Client) Close() error {
	if c == nil {
		return nil
	}
	return c.c.Close()
}
