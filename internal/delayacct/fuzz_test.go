package delayacct

import (
	"encoding/binary"
	"testing"
	"unsafe"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// FuzzParseStats: a struct taskstats of any length and version gives its
// fields or an error, never a panic; one long enough for the block-IO
// delay gives back what it holds.
func FuzzParseStats(f *testing.F) {
	f.Add(make([]byte, unsafe.Sizeof(unix.Taskstats{})), uint16(16), uint64(7), uint64(9))
	f.Add(make([]byte, offBlkioDelay+8), uint16(8), uint64(0), uint64(1))
	f.Add(make([]byte, 3), uint16(15), uint64(0), uint64(0))
	f.Fuzz(func(t *testing.T, raw []byte, version uint16, count, delay uint64) {
		ParseStats(raw)
		if uintptr(len(raw)) < offBlkioDelay+8 || version == versionMidMax {
			return
		}
		raw = append([]byte(nil), raw...)
		binary.NativeEndian.PutUint16(raw[offVersion:], version)
		binary.NativeEndian.PutUint64(raw[offBlkioCount:], count)
		binary.NativeEndian.PutUint64(raw[offBlkioDelay:], delay)
		task, err := ParseStats(raw)
		if err != nil || task.Version != version || task.BlkioCount != count || task.BlkioDelayNs != delay {
			t.Errorf("ParseStats = %+v, %v", task, err)
		}
		if task.HasMax != (uintptr(len(raw)) >= offBlkioMax+8) {
			t.Errorf("HasMax %v with %d bytes", task.HasMax, len(raw))
		}
	})
}

// FuzzParseReply: any netlink attributes give a task or an error, never
// a panic; a reply for another task is refused.
func FuzzParseReply(f *testing.F) {
	stats := make([]byte, unsafe.Sizeof(unix.Taskstats{}))
	binary.NativeEndian.PutUint16(stats[offVersion:], 16)
	inner, _ := netlink.MarshalAttributes([]netlink.Attribute{
		{Type: unix.TASKSTATS_TYPE_PID, Data: binary.NativeEndian.AppendUint32(nil, 42)},
		{Type: unix.TASKSTATS_TYPE_STATS, Data: stats},
	})
	reply, _ := netlink.MarshalAttributes([]netlink.Attribute{{Type: unix.TASKSTATS_TYPE_AGGR_PID | unix.NLA_F_NESTED, Data: inner}})
	f.Add(reply, 42)
	f.Add(reply, 43)
	f.Add([]byte{4, 0, 1}, 1)
	f.Fuzz(func(t *testing.T, data []byte, tid int) {
		task, err := parseReply(data, tid)
		if err == nil && string(data) == string(reply) && (tid != 42 || task.Version != 16) {
			t.Errorf("parseReply for %d = %+v", tid, task)
		}
	})
}
