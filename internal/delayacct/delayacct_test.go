package delayacct

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/mdlayher/netlink"
	"github.com/perfsleuth/perfsleuth/internal/runfile"
	"golang.org/x/sys/unix"
)

// stats builds a struct taskstats of n bytes with the given version and
// fields (by offset), as the kernel sends it.
func stats(n int, version uint16, fields map[uintptr]uint64) []byte {
	b := make([]byte, n)
	binary.NativeEndian.PutUint16(b[offVersion:], version)
	for off, v := range fields {
		binary.NativeEndian.PutUint64(b[off:], v)
	}
	return b
}

func TestParseStats(t *testing.T) {
	full := int(unsafe.Sizeof(unix.Taskstats{}))
	fields := map[uintptr]uint64{
		offCPUCount: 7, offCPUDelay: 4_221_000, offBlkioCount: 1989, offBlkioDelay: 50_557_000,
		offSwapin: 1, offFreepages: 2, offThrashing: 3, offCompact: 4, offBlkioMax: 31_870_000,
	}
	got, err := ParseStats(stats(full, 16, fields))
	if err != nil {
		t.Fatal(err)
	}
	want := Task{Version: 16, CPUCount: 7, CPUDelayNs: 4_221_000, BlkioCount: 1989, BlkioDelayNs: 50_557_000,
		MemoryDelayNs: 10, BlkioMaxNs: 31_870_000, HasMax: true}
	if got != want {
		t.Errorf("version 16: got %+v, want %+v", got, want)
	}

	// An older kernel's shorter struct: the fields it lacks read 0, and
	// the maximum is missing, not 0.
	short := int(offThrashing) // ends before thrashing
	got, err = ParseStats(stats(short, 8, map[uintptr]uint64{offBlkioDelay: 5, offSwapin: 1, offFreepages: 2}))
	if err != nil {
		t.Fatal(err)
	}
	if got.BlkioDelayNs != 5 || got.MemoryDelayNs != 3 || got.HasMax {
		t.Errorf("version 8: got %+v, want blkio 5, memory 3, no max", got)
	}

	if _, err := ParseStats(stats(full, 15, fields)); err == nil || !strings.Contains(err.Error(), "version 15") {
		t.Errorf("version 15: err %v, want it refused", err)
	}
	if _, err := ParseStats(make([]byte, 20)); err == nil {
		t.Error("a 20-byte struct parsed")
	}
}

// reply encodes a TASKSTATS_CMD_NEW reply for pid with raw stats.
func reply(t *testing.T, pid uint32, raw []byte) []byte {
	t.Helper()
	ae := netlink.NewAttributeEncoder()
	ae.Nested(unix.TASKSTATS_TYPE_AGGR_PID, func(nae *netlink.AttributeEncoder) error {
		nae.Uint32(unix.TASKSTATS_TYPE_PID, pid)
		nae.Bytes(unix.TASKSTATS_TYPE_STATS, raw)
		return nil
	})
	b, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseReply(t *testing.T) {
	raw := stats(int(unsafe.Sizeof(unix.Taskstats{})), 16, map[uintptr]uint64{offBlkioDelay: 42})
	got, err := parseReply(reply(t, 1234, raw), 1234)
	if err != nil || got.BlkioDelayNs != 42 {
		t.Errorf("got %+v, %v; want blkio 42", got, err)
	}
	if _, err := parseReply(reply(t, 99, raw), 1234); err == nil {
		t.Error("a reply for another task was taken")
	}
	if _, err := parseReply(nil, 1234); err == nil {
		t.Error("an empty reply parsed")
	}
}

// TestSwitch turns a sysctl file on and restores it, and leaves alone one
// that was on, or that someone turned off meanwhile.
func TestSwitch(t *testing.T) {
	dir := t.TempDir()
	path, users := filepath.Join(dir, "task_delayacct"), filepath.Join(dir, "run", "delayacct")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	me := self()
	write("0\n")
	s := turnOn(path, users, me)
	if s == nil || State(path) != StateOn || !TurnedOn() {
		t.Fatalf("turnOn: switch %v, state %s, turned on %v", s, State(path), TurnedOn())
	}
	if err := s.Restore(); err != nil || State(path) != StateOff || TurnedOn() {
		t.Fatalf("restore: %v, state %s, turned on %v", err, State(path), TurnedOn())
	}
	if _, err := os.Stat(filepath.Dir(users)); !os.IsNotExist(err) {
		t.Errorf("the users file's directory is left: %v", err)
	}
	write("1\n")
	if err := s.Restore(); err != nil || State(path) != StateOn {
		t.Errorf("a second restore changed it: %v, state %s", err, State(path))
	}

	if s := turnOn(path, users, me); s != nil {
		t.Error("turnOn changed a sysctl that was on")
	}

	// Two runs of one process: the first restore leaves it on for the other.
	write("0\n")
	a, b := turnOn(path, users, me), turnOn(path, users, me)
	if a == nil || b == nil {
		t.Fatalf("turnOn twice: %v, %v", a, b)
	}
	if err := a.Restore(); err != nil || State(path) != StateOn {
		t.Errorf("the first restore of two: %v, state %s", err, State(path))
	}
	write("0\n")
	if err := b.Restore(); err != nil || State(path) != StateOff {
		t.Errorf("restore after someone turned it off: %v, state %s", err, State(path))
	}

	if State(filepath.Join(t.TempDir(), "none")) != StateUnavailable {
		t.Error("a missing sysctl is not unavailable")
	}
	var none *Switch
	if err := none.Restore(); err != nil {
		t.Error(err)
	}
}

// TestSwitchTwoProcesses: two perfsleuth processes at once (a child stands
// in for the other). The one that ends first leaves delay accounting on
// for the other; the last turns it off, whichever turned it on; one killed
// before it could leave does not keep it on for ever.
func TestSwitchTwoProcesses(t *testing.T) {
	dir := t.TempDir()
	path, users := filepath.Join(dir, "task_delayacct"), filepath.Join(dir, "run", "delayacct")
	if err := os.WriteFile(path, []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := func() (user, func()) {
		cmd := exec.Command("sleep", "60")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		u := user{pid: cmd.Process.Pid, start: runfile.StartTime(cmd.Process.Pid)}
		return u, func() { cmd.Process.Kill(); cmd.Wait() }
	}
	me := self()

	// This one turns it on, the other joins; this one ends first.
	o, kill := other()
	defer kill()
	a := turnOn(path, users, me)
	b := turnOn(path, users, o)
	if a == nil || b == nil {
		t.Fatalf("turnOn: %v, %v", a, b)
	}
	a.Restore()
	if State(path) != StateOn {
		t.Fatal("the first to end turned it off under the other")
	}
	b.Restore()
	if State(path) != StateOff {
		t.Fatal("the last to end left it on")
	}

	// The other turns it on and is killed before it leaves: this one
	// joins, and turns it off at its end.
	o2, kill2 := other()
	s2 := turnOn(path, users, o2)
	if s2 == nil {
		t.Fatal("turnOn")
	}
	defer s2.Restore() // the count of this process's switches, which stands in for the other
	c := turnOn(path, users, me)
	kill2()
	c.Restore()
	if State(path) != StateOff {
		t.Error("a killed perfsleuth's entry kept it on")
	}
	if _, err := os.Stat(users); !os.IsNotExist(err) {
		t.Errorf("the users file is left: %v", err)
	}

	s2.Restore()

	// A users file that cannot be made: this process alone, as before.
	ro := filepath.Join(dir, "file")
	os.WriteFile(ro, nil, 0o644)
	d := turnOn(path, filepath.Join(ro, "delayacct"), me)
	if d == nil || State(path) != StateOn {
		t.Fatal("turnOn without a users file")
	}
	if err := d.Restore(); err != nil || State(path) != StateOff {
		t.Errorf("restore without a users file: %v, %s", err, State(path))
	}
}

// TestClientOwnThread asks the kernel for this thread's delay accounting:
// its run-queue wait is schedstat's second field, the same counter.
func TestClientOwnThread(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: taskstats needs CAP_NET_ADMIN, run the tests with sudo")
	}
	c, err := Open()
	if err != nil {
		t.Skipf("no taskstats here: %v", err)
	}
	defer c.Close()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := unix.Gettid()
	before, err := os.ReadFile("/proc/thread-self/schedstat")
	if err != nil {
		t.Skipf("no schedstat: %v", err)
	}
	task, err := c.Task(tid)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile("/proc/thread-self/schedstat")
	wait := func(b []byte) uint64 {
		f := strings.Fields(string(b))
		v, _ := strconv.ParseUint(f[1], 10, 64)
		return v
	}
	if task.Version == 0 || task.CPUDelayNs < wait(before) || task.CPUDelayNs > wait(after) {
		t.Errorf("task %+v: run-queue wait %d ns, schedstat's %d..%d ns", task, task.CPUDelayNs, wait(before), wait(after))
	}
	if _, err := c.Task(1 << 30); err == nil {
		t.Error("a task that does not exist was read")
	}
}
