package timeacct

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/probe"
	"github.com/perfsleuth/perfsleuth/internal/symbolize"
)

// locksOf merges the lock waits by what they waited on (process, file or
// futex, syscall class) and names each from the frames of its walked waits
// (the kernel, user and holder stacks of the kinds with the most time),
// most time first, at most probe.MaxStacks. name is called only when
// there is something to name (it loads the kernel's symbols). The note
// says what the figures leave out.
func locksOf(ls []LockWait, walks, dropped uint64, name func() *symbolize.Namer) ([]model.LockWait, string) {
	type key struct {
		pid  int
		dev  string
		obj  uint64
		act  int
		futx bool
	}
	type agg struct {
		w                   model.LockWait
		bestK, bestU, bestH uint64
		threads             map[int]*model.LockThread
	}
	groups := map[key]*agg{}
	var order []key
	var lost uint64
	var lostWhy string
	for _, l := range ls {
		k := key{l.PID, l.Dev, l.Obj, l.Act, l.Futex}
		g := groups[k]
		if g == nil {
			g = &agg{w: model.LockWait{PID: l.PID, Path: l.Path, Activity: Activities[l.Act%len(Activities)]}, threads: map[int]*model.LockThread{}}
			groups[k] = g
			order = append(order, k)
		}
		g.w.Count += int64(l.Count)
		g.w.Seconds += float64(l.Ns) / 1e9
		th := g.threads[l.TID]
		if th == nil {
			th = &model.LockThread{TID: l.TID}
			g.threads[l.TID] = th
		}
		th.Count += int64(l.Count)
		th.Seconds += float64(l.Ns) / 1e9
		if l.Walked {
			g.w.Walked += int64(l.Count)
		}
		if l.KernelErr != "" {
			lost += l.Count
			lostWhy = l.KernelErr
		}
		// A futex wait's kernel stack is the futex's own: its user
		// stack says where.
		if len(l.Kernel) > 0 && !l.Futex && l.Ns > g.bestK {
			g.bestK = l.Ns
			g.w.Kernel, _, _, _ = name().Name(l.PID, l.Kernel, nil)
		}
		if len(l.User) > 0 && l.Ns > g.bestU {
			g.bestU = l.Ns
			_, g.w.User, _, _ = name().Name(l.PID, nil, l.User)
		}
		if len(l.Holder) > 0 && l.Ns > g.bestH {
			g.bestH = l.Ns
			if l.Futex {
				_, g.w.Holder, _, _ = name().Name(l.PID, nil, l.Holder)
			} else {
				g.w.Holder, _, _, _ = name().Name(l.PID, l.Holder, nil)
				g.w.Holder = pastWakeup(g.w.Holder)
			}
		}
	}
	out := []model.LockWait{}
	for _, k := range order {
		g := groups[k]
		for _, th := range g.threads {
			g.w.Threads = append(g.w.Threads, *th)
		}
		slices.SortFunc(g.w.Threads, func(a, b model.LockThread) int {
			return cmp.Or(cmp.Compare(b.Seconds, a.Seconds), cmp.Compare(a.TID, b.TID))
		})
		switch {
		case k.futx && k.obj == 0:
			// lock_begin did not see these waits begin.
			g.w.Kind = model.LockFutex
			g.w.Lock = "futexes waited on since before the window (their addresses not read)"
		case k.futx:
			g.w.Kind = model.LockFutex
			g.w.Addr = fmt.Sprintf("%#x", k.obj)
			g.w.Lock = "futex " + g.w.Addr
			if v := name().Data(k.pid, k.obj); v != "" {
				g.w.Lock = "futex " + v
			}
		case g.w.Path != "":
			g.w.Kind = model.LockFile
			g.w.Lock = fileLockName(g.w.Kernel, g.w.Activity) + " of " + g.w.Path
		default:
			g.w.Kind = model.LockKernel
			g.w.Lock = "a kernel lock in " + g.w.Activity + " calls"
			if f := lockSite(g.w.Kernel); isOneOf(f, mmapLockSites) {
				g.w.Lock = "the process's mmap lock (mmap_lock, taken in " + f + ")"
			} else if f != "" {
				g.w.Lock = "a kernel lock taken in " + f
			}
		}
		out = append(out, g.w)
	}
	slices.SortFunc(out, func(a, b model.LockWait) int { return cmp.Compare(b.Seconds, a.Seconds) })
	if len(out) > probe.MaxStacks {
		out = out[:probe.MaxStacks]
	}
	var notes []string
	if lost > 0 {
		notes = append(notes, fmt.Sprintf("%d of the %d lock waits whose stacks were walked have no kernel stack (%s): their lock is named from their file or futex alone", lost, walks, lostWhy))
	}
	if dropped > 0 {
		notes = append(notes, fmt.Sprintf("%d lock waits not counted here (the locks map was full); their time is in the accounting", dropped))
	}
	return out, strings.Join(notes, "; ")
}

// lockSlowPaths are the kernel's sleeping-lock slow paths and the calls
// that reach them: the frame past them took the lock.
var lockSlowPaths = []string{"rwsem_down_write_slowpath", "rwsem_down_read_slowpath", "__mutex_lock", "mutex_lock", "down_write", "down_read",
	"__rt_mutex", "rt_mutex", "down_write_killable", "down_read_killable", "schedule_preempt_disabled", "__down", "down", "percpu_rwsem_wait",
	"__percpu_down_read", "schedule", "__schedule", "schedule_timeout", "io_schedule"}

// lockSite is the first frame past the scheduler and the lock's slow
// path: the function that took the lock ("" without frames, or when no
// slow path is among them).
func lockSite(frames []string) string {
	seenLock := false
	for _, f := range frames {
		switch {
		case isOneOf(symbolize.Function(f), lockSlowPaths):
			seenLock = true
		case seenLock:
			return symbolize.Function(f)
		}
	}
	return ""
}

// mmapLockSites take a process's mmap_lock: a thread that maps, unmaps or
// advises on memory, or takes a page fault, while another does.
var mmapLockSites = []string{"madvise_do_behavior", "do_madvise", "madvise_lock", "__vm_munmap", "vm_munmap", "vm_mmap_pgoff", "do_vmi_munmap",
	"lock_mm_and_find_vma", "do_mprotect_pkey", "__do_sys_brk", "__do_sys_mremap", "mmap_read_lock", "mmap_write_lock", "do_user_addr_fault",
	"get_mmap_lock_carefully"}

// fileLockName says which lock a wait in a call on a file was: its
// inode's (i_rwsem) when a rwsem's slow path sits under the call, else a
// kernel lock taken where the frames say.
func fileLockName(frames []string, act string) string {
	rwsem := false
	for _, f := range frames {
		name := symbolize.Function(f)
		if strings.HasPrefix(name, "rwsem_down_") || name == "down_write" || name == "down_read" || strings.HasPrefix(name, "down_write_") {
			rwsem = true
		}
	}
	site := lockSite(frames)
	switch {
	case rwsem && (act == "write" || act == "read" || act == "sync"):
		if site != "" {
			return "the inode lock (i_rwsem, taken in " + site + ")"
		}
		return "the inode lock (i_rwsem)"
	case site != "":
		return "a kernel lock taken in " + site + ", in " + act + " calls"
	case len(frames) == 0:
		return "a kernel lock in " + act + " calls"
	}
	return "a kernel lock in " + act + " calls"
}

// wakeupFrames are the frames of the wake-up itself on a waker's kernel
// stack: the holder's own frames come after them (up_write's caller).
var wakeupFrames = []string{"try_to_wake_up", "wake_up_q", "wake_up_process", "__wake_up", "rwsem_wake", "__rwsem_wake", "up_write", "up_read",
	"__mutex_unlock_slowpath", "mutex_unlock", "__up", "up", "futex_wake", "__traceiter", "bpf", "ttwu"}

// pastWakeup drops the wake-up's frames from a waker's kernel stack, so
// that it starts at the code that let the lock go.
func pastWakeup(frames []string) []string {
	last := -1
	for i, f := range frames {
		if isOneOf(symbolize.Function(f), wakeupFrames) {
			last = i
		}
	}
	return frames[last+1:]
}

// isOneOf says whether the function name is one of names or a variant of
// one (name.cold, name.isra.0, name_slowpath).
func isOneOf(name string, names []string) bool {
	for _, p := range names {
		if name == p || strings.HasPrefix(name, p+".") || strings.HasPrefix(name, p+"_") {
			return true
		}
	}
	return false
}
