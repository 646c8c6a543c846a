package runner

import (
	"cmp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/probe/profile"
	"github.com/perfsleuth/perfsleuth/internal/probe/timeacct"
	"github.com/perfsleuth/perfsleuth/internal/proctree"
	"github.com/perfsleuth/perfsleuth/internal/symbolize"
)

// mapsEvery is how often the mappings of the observed processes are read:
// a process that exits keeps its last snapshot, so user stacks of a
// short-lived process resolve if it lived this long.
const mapsEvery = 200 * time.Millisecond

// maxStacks bounds the off-CPU and the on-CPU stacks kept in the record
// (most time first).
const maxStacks = 200

// mapsKeeper reads /proc/PID/maps of every process of a tree periodically,
// keeping the last snapshot of each.
type mapsKeeper struct {
	mu   sync.Mutex
	maps map[int]*symbolize.Maps
	done chan struct{}
	wg   sync.WaitGroup
}

func keepMaps(root int) *mapsKeeper {
	k := &mapsKeeper{maps: map[int]*symbolize.Maps{}, done: make(chan struct{})}
	k.read(root)
	k.wg.Go(func() {
		t := time.NewTicker(mapsEvery)
		defer t.Stop()
		for {
			select {
			case <-k.done:
				return
			case <-t.C:
				k.read(root)
			}
		}
	})
	return k
}

func (k *mapsKeeper) read(root int) {
	pids, _ := proctree.Descendants("/proc", root)
	for _, pid := range append(pids, root) {
		k.keep(pid)
	}
}

// keep takes a snapshot of pid's mappings unless it has none left: an
// exited process not yet reaped (a zombie) shows an empty maps file, which
// must not replace the snapshot taken while it ran.
func (k *mapsKeeper) keep(pid int) {
	m, err := symbolize.ReadMaps(pid)
	if err != nil || m == nil || len(m.Mappings) == 0 {
		return
	}
	k.mu.Lock()
	k.maps[pid] = m
	k.mu.Unlock()
}

// snapshot returns pid's last snapshot, nil if none was taken. Safe on nil.
func (k *mapsKeeper) snapshot(pid int) *symbolize.Maps {
	if k == nil {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.maps[pid]
}

// stop ends the periodic reads and takes a last snapshot of the processes
// still there. Safe on nil and more than once.
func (k *mapsKeeper) stop() {
	if k == nil {
		return
	}
	select {
	case <-k.done:
		return
	default:
	}
	close(k.done)
	k.wg.Wait()
	for pid := range k.maps {
		k.keep(pid)
	}
}

// namer names the frames of stacks: kernel frames from /proc/kallsyms,
// user frames from the ELF symbols of the files each process had mapped.
type namer struct {
	kern *symbolize.Kernel
	kerr error
	user *symbolize.User
	maps *mapsKeeper
}

func newNamer(maps *mapsKeeper) *namer {
	kern, kerr := symbolize.LoadKernel("/proc/kallsyms")
	return &namer{kern: kern, kerr: kerr, user: symbolize.NewUser(), maps: maps}
}

// name returns the named kernel and user frames of one pair of stacks and
// a note for each that could not be named in full (empty otherwise).
func (n *namer) name(pid int, kernel, user []uint64) (kf, uf []string, knote, unote string) {
	kf = kernelFrames(n.kern, kernel)
	if n.kerr != nil && len(kernel) > 0 {
		knote = "kernel frames not named: " + n.kerr.Error()
	}
	uf = []string{}
	m := n.maps.snapshot(pid)
	for i, a := range user {
		if m == nil {
			uf = append(uf, hexAddr(a))
			continue
		}
		if !m.Contains(a) {
			unote = "the stack walk stopped at an address outside the process's code: a library built without frame pointers"
			break
		}
		uf = append(uf, n.user.Symbol(m, retAddr(a, i)))
	}
	if m == nil && len(user) > 0 {
		unote = "user frames not named: the process's mappings were never read (it lived under " + mapsEvery.String() + ")"
	}
	return kf, uf, knote, unote
}

// symbolise names the frames of the off-CPU stacks.
func symbolise(stacks []timeacct.OffCPUStack, n *namer) []model.OffCPUStack {
	out := []model.OffCPUStack{}
	for i, s := range stacks {
		if i == maxStacks {
			break
		}
		o := model.OffCPUStack{PID: s.PID, TID: s.TID, Category: timeacct.Categories[s.Category], Seconds: float64(s.Ns) / 1e9,
			Count: int64(s.Count), KernelNote: s.KernelErr, UserNote: s.UserErr}
		var kn, un string
		o.Kernel, o.User, kn, un = n.name(s.PID, s.Kernel, s.User)
		o.KernelNote, o.UserNote = cmp.Or(kn, o.KernelNote), cmp.Or(un, o.UserNote)
		out = append(out, o)
	}
	return out
}

// symboliseOnCPU names the frames of the on-CPU samples.
func symboliseOnCPU(res *profile.Result, n *namer) []model.OnCPUStack {
	out := []model.OnCPUStack{}
	for i, s := range res.Stacks {
		if i == maxStacks {
			break
		}
		o := model.OnCPUStack{PID: s.PID, TID: s.TID, Comm: s.Comm, Samples: int64(s.Samples),
			Seconds: float64(s.Samples) / float64(res.Hz), KernelNote: s.KernelErr, UserNote: s.UserErr}
		var kn, un string
		o.Kernel, o.User, kn, un = n.name(s.PID, s.Kernel, s.User)
		o.KernelNote, o.UserNote = cmp.Or(kn, o.KernelNote), cmp.Or(un, o.UserNote)
		out = append(out, o)
	}
	return out
}

func hexAddr(a uint64) string { return "0x" + strconv.FormatUint(a, 16) }

// retAddr is the address to name for frame i: every frame but the innermost
// is a return address, which for a call at the end of a function is
// already the next function's first byte.
func retAddr(a uint64, i int) uint64 {
	if i > 0 && a > 0 {
		return a - 1
	}
	return a
}

// kernelFrames names the kernel frames, dropping those of the probe itself
// (the BPF program and bpf_trace_run*, which took the stack) and the
// scheduler's own frames above them.
func kernelFrames(kern *symbolize.Kernel, addrs []uint64) []string {
	out := []string{}
	for i, a := range addrs {
		name := kern.Symbol(retAddr(a, i))
		if strings.HasPrefix(name, "bpf_trace_run") {
			out = out[:0]
			continue
		}
		// Every sleep goes through the scheduler: its frames tell nothing.
		if len(out) == 0 && (strings.HasPrefix(name, "__schedule+") || strings.HasPrefix(name, "schedule+")) {
			continue
		}
		out = append(out, name)
	}
	return out
}
