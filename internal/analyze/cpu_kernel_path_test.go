package analyze

import (
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// TestCPUKernelPath: the most specific kernel function that 30% of the
// busy threads' samples pass through (of equal ones the innermost), the
// syscall entry left out; none
// when the cpu share is small or the samples few.
func TestCPUKernelPath(t *testing.T) {
	entry := []string{"__x64_sys_openat+0x10", "do_syscall_64+0x70", "entry_SYSCALL_64_after_hwframe+0x75"}
	stack := func(n int64, frames ...string) model.OnCPUStack {
		return model.OnCPUStack{TID: 1, Samples: n, Kernel: append(frames, entry...)}
	}
	run := func(cpu float64, stacks ...model.OnCPUStack) *model.Run {
		return &model.Run{TimeAccounting: &model.TimeAccounting{
			Threads: []model.ThreadTime{{TID: 1, WallSec: 1, Seconds: map[string]float64{model.CatCPU: cpu, model.CatSleep: 1 - cpu}}},
			Total:   map[string]float64{model.CatCPU: cpu, model.CatSleep: 1 - cpu},
			OnCPU:   stacks, OnCPUSource: model.OnCPUTick, OnCPUHz: 50,
		}}
	}
	stacks := []model.OnCPUStack{
		stack(30, "recently_deleted+0x4", "find_inode_bit+0x20", "__ext4_new_inode+0x100", "ext4_create+0x10", "path_openat+0x40"),
		stack(10, "memset+0x1", "__ext4_new_inode+0x120", "ext4_create+0x10", "path_openat+0x40"),
		stack(60, "link_path_walk+0x9", "path_openat+0x30"),
	}
	f := cpuKernelPath(run(0.98, stacks...))
	if f == nil {
		t.Fatal("no finding for 98% cpu, 100 samples, 30% through recently_deleted")
	}
	if !strings.Contains(f.Summary, "30%") || !strings.Contains(f.Summary, "recently_deleted (ext4 skipping") {
		t.Errorf("summary %q: want recently_deleted, 30%%", f.Summary)
	}
	ev := strings.Join(f.Evidence, "\n")
	if !strings.Contains(ev, "called from find_inode_bit <- __ext4_new_inode <- ext4_create") || !strings.Contains(ev, "recently_deleted 30%") {
		t.Errorf("evidence %q: want its callers and its innermost functions", ev)
	}
	if f.Severity != "warning" || f.Test.Value != 0.3 {
		t.Errorf("severity %s, test %+v: want a warning (0.3 x 0.98 of the busy time), value 0.3", f.Severity, f.Test)
	}
	// Without the 30: __ext4_new_inode's 10 and path_openat's 70 of 70.
	if f := cpuKernelPath(run(0.98, stacks[1:]...)); f == nil || !strings.Contains(f.Summary, "link_path_walk") {
		t.Errorf("60 of 70 through link_path_walk: %+v", f)
	}
	if f := cpuKernelPath(run(0.10, stacks...)); f != nil {
		t.Errorf("a finding at 10%% cpu: %s", f.Summary)
	}
	if f := cpuKernelPath(run(0.98, stack(10, "link_path_walk+0x9"))); f != nil {
		t.Errorf("a finding on 10 samples: %s", f.Summary)
	}
	if f := cpuKernelPath(run(0.98, stack(100))); f != nil {
		t.Errorf("a finding on the syscall entry alone: %s", f.Summary)
	}
}

// TestTopLockLeavesIdleOut: a parked thread's futex, however long its
// wait, is not the lock the busy threads contend on.
func TestTopLockLeavesIdleOut(t *testing.T) {
	ta := &model.TimeAccounting{
		Threads: []model.ThreadTime{{TID: 1}, {TID: 2}, {TID: 3, Idle: true}},
		Locks: []model.LockWait{
			{Lock: "futex 0x10", Seconds: 5, Count: 1, Threads: []model.LockThread{{TID: 3, Seconds: 5, Count: 1}}},
			{Lock: "the inode lock (i_rwsem) of /f", Seconds: 0.9, Count: 90, Threads: []model.LockThread{{TID: 1, Seconds: 0.5, Count: 50}, {TID: 2, Seconds: 0.4, Count: 40}}},
			{Lock: "futex 0x20", Seconds: 0.1, Count: 10, Threads: []model.LockThread{{TID: 1, Seconds: 0.1, Count: 10}}},
		},
	}
	l, share := topLock(ta)
	if l != "the inode lock (i_rwsem) of /f" || share != 0.9 {
		t.Errorf("top lock %q, %.2f: want the inode lock, 0.90", l, share)
	}
	named := namedLocks(ta, 3)
	if len(named) != 2 || !strings.HasPrefix(named[0], "90% of the lock waits on the inode lock (i_rwsem) of /f, in  calls (90 waits") {
		t.Errorf("named %q: want the inode lock (90%%) then futex 0x20", named)
	}
}
