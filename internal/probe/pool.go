package probe

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"
)

// Loading a probe is most of what it costs a process that observes window
// after window (the agent): the kernel verifies every program again, about
// 0.2-0.3 s of CPU for timeacct here, where a 60 s window of an idle target
// costs the rest of the agent less. With KeepLoaded on, a collection a
// probe releases (Release, after its links are closed) is emptied and kept;
// the next NewCollection of the same spec, with the same maps replaced,
// takes it instead of loading again. Emptied means as loaded: every hash,
// LRU, stack and queue map without entries, every array zeroed, the data
// sections (.data, .bss) back to their initial bytes, the ring buffers
// drained, and each task-local storage emptied by the object's own
// iterator over all tasks (a program named "reset_" + the map's name,
// SEC("iter/task")); a collection with a map none of these empties is not
// kept. Its programs' kernel statistics (run counts, run time, recursion
// misses) keep adding up across uses: ProgStats gives them since the
// collection was taken.

// poolMax bounds the collections kept (one per probe, and the few a
// concurrent observation, the agent's /profile, adds); one not taken in
// the last poolStale loads and takes is closed (calibration's, a
// profile asked for once).
const (
	poolMax   = 8
	poolStale = 2 * poolMax
)

type pooled struct {
	key  [sha256.Size]byte
	what string
	coll *ebpf.Collection // the originals, the pool's own descriptors
	spec *ebpf.CollectionSpec
	// replaced are the maps another probe's collection owns
	// (CollectionOptions.MapReplacements): its Release empties them.
	replaced map[string]bool
	busy     bool
	// used is the pool's use count when it was last taken or loaded.
	used int
	// out is the collection of clones handed out while busy.
	out *ebpf.Collection
}

var pool struct {
	sync.Mutex
	on      bool
	entries []*pooled
	// taken and loaded count NewCollection's collections taken from the
	// pool and loaded while it was on.
	taken, loaded int
	// base is each pooled program's kernel statistics when it was last
	// taken, by program ID.
	base map[ebpf.ProgramID]ebpf.ProgramStats
}

// KeepLoaded turns the pool on or off; off closes what it kept.
func KeepLoaded(on bool) {
	pool.Lock()
	defer pool.Unlock()
	pool.on = on
	if on {
		return
	}
	// The ones in use are closed when released.
	pool.entries = slices.DeleteFunc(pool.entries, func(e *pooled) bool {
		if !e.busy {
			e.coll.Close()
		}
		return !e.busy
	})
	pool.base = nil
}

// PoolCounts are how many collections NewCollection took from the pool
// and how many it loaded, while KeepLoaded was on.
func PoolCounts() (taken, loaded int) {
	pool.Lock()
	defer pool.Unlock()
	return pool.taken, pool.loaded
}

// fingerprint is what makes two loads of a spec the same collection: its
// programs (names, types, attach points, instructions) and maps (types,
// sizes, flags, initial contents: the constants set in .rodata among
// them), and which kernel map replaces which.
func fingerprint(what string, spec *ebpf.CollectionSpec, repl map[string]*ebpf.Map) ([sha256.Size]byte, bool) {
	h := sha256.New()
	put := func(vs ...any) {
		for _, v := range vs {
			fmt.Fprint(h, v, "\x00")
		}
	}
	put(what)
	for _, name := range slices.Sorted(maps.Keys(spec.Programs)) {
		p := spec.Programs[name]
		put("prog", name, p.Type, p.AttachType, p.AttachTo, p.SectionName, len(p.Instructions))
		var b [8]byte
		for _, ins := range p.Instructions {
			h.Write([]byte{byte(ins.OpCode), byte(ins.Dst), byte(ins.Src)})
			binary.LittleEndian.PutUint64(b[:], uint64(ins.Constant))
			h.Write(b[:])
		}
	}
	for _, name := range slices.Sorted(maps.Keys(spec.Maps)) {
		putMapSpec(h, name, spec.Maps[name])
	}
	for _, name := range slices.Sorted(maps.Keys(repl)) {
		info, err := repl[name].Info()
		if err != nil {
			return [sha256.Size]byte{}, false
		}
		id, ok := info.ID()
		if !ok {
			return [sha256.Size]byte{}, false
		}
		put("replaced", name, id)
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key, true
}

func putMapSpec(h hash.Hash, name string, m *ebpf.MapSpec) {
	fmt.Fprint(h, "map\x00", name, "\x00", m.Type, m.KeySize, m.ValueSize, m.MaxEntries, m.Flags, m.Pinning, "\x00")
	for _, kv := range m.Contents {
		fmt.Fprintf(h, "%v=%v\x00", kv.Key, kv.Value)
	}
	if m.InnerMap != nil {
		putMapSpec(h, name+".inner", m.InnerMap)
	}
}

// take hands out a kept collection loaded from an equal spec, as clones,
// or nil.
func take(what string, spec *ebpf.CollectionSpec, opts ebpf.CollectionOptions) (*ebpf.Collection, [sha256.Size]byte, bool) {
	pool.Lock()
	defer pool.Unlock()
	if !pool.on {
		return nil, [sha256.Size]byte{}, false
	}
	key, ok := fingerprint(what, spec, opts.MapReplacements)
	if !ok {
		return nil, key, false
	}
	for _, e := range pool.entries {
		if e.busy || e.key != key {
			continue
		}
		out, err := clones(e.coll)
		if err != nil {
			// Out of descriptors or the like: load anew.
			return nil, key, true
		}
		for _, p := range e.coll.Programs {
			if id, s, err := progStats(p); err == nil {
				pool.base[id] = s
			}
		}
		e.busy, e.out = true, out
		pool.taken++
		e.used = pool.taken + pool.loaded
		closeStale()
		return out, key, true
	}
	return nil, key, true
}

// keep puts a collection just loaded in the pool, busy, and returns the
// clones to hand out; it returns coll itself when it is not kept.
func keep(what string, key [sha256.Size]byte, spec *ebpf.CollectionSpec, opts ebpf.CollectionOptions, coll *ebpf.Collection) *ebpf.Collection {
	pool.Lock()
	defer pool.Unlock()
	if pool.on {
		pool.loaded++
	}
	replaced := map[string]bool{}
	for name := range opts.MapReplacements {
		replaced[name] = true
	}
	if !pool.on || !resettable(spec, coll, replaced) {
		return coll
	}
	if len(pool.entries) >= poolMax {
		i := slices.IndexFunc(pool.entries, func(e *pooled) bool { return !e.busy })
		if i < 0 {
			return coll
		}
		pool.entries[i].coll.Close()
		pool.entries = slices.Delete(pool.entries, i, i+1)
	}
	out, err := clones(coll)
	if err != nil {
		return coll
	}
	if pool.base == nil {
		pool.base = map[ebpf.ProgramID]ebpf.ProgramStats{}
	}
	pool.entries = append(pool.entries, &pooled{key: key, what: what, coll: coll, spec: spec, replaced: replaced, busy: true, out: out,
		used: pool.taken + pool.loaded})
	closeStale()
	return out
}

// closeStale closes the free collections not used in the last poolStale
// loads and takes.
func closeStale() {
	now := pool.taken + pool.loaded
	pool.entries = slices.DeleteFunc(pool.entries, func(e *pooled) bool {
		if e.busy || now-e.used <= poolStale {
			return false
		}
		e.coll.Close()
		return true
	})
}

// clones are new descriptors of coll's programs and maps; its variables
// are its own (they live in its data sections' memory, which the pool
// keeps mapped).
func clones(coll *ebpf.Collection) (*ebpf.Collection, error) {
	out := &ebpf.Collection{Variables: maps.Clone(coll.Variables)}
	var perr, merr error
	out.Programs, perr = cloneAll(coll.Programs)
	out.Maps, merr = cloneAll(coll.Maps)
	if err := errors.Join(perr, merr); err != nil {
		out.Close()
		return nil, err
	}
	return out, nil
}

// cloneAll clones each of objs (programs or maps); on an error, the
// clones made so far are returned with it, for the caller to close.
func cloneAll[T interface{ Clone() (T, error) }](objs map[string]T) (map[string]T, error) {
	out := make(map[string]T, len(objs))
	for name, o := range objs {
		c, err := o.Clone()
		if err != nil {
			return out, err
		}
		out[name] = c
	}
	return out, nil
}

// resettable says whether every map of coll but the replaced ones can be
// emptied (reset).
func resettable(spec *ebpf.CollectionSpec, coll *ebpf.Collection, replaced map[string]bool) bool {
	for name, m := range coll.Maps {
		if replaced[name] {
			continue
		}
		switch m.Type() {
		case ebpf.Hash, ebpf.LRUHash, ebpf.PerCPUHash, ebpf.LRUCPUHash, ebpf.StackTrace,
			ebpf.Array, ebpf.PerCPUArray, ebpf.Queue, ebpf.RingBuf, ebpf.PerfEventArray:
		case ebpf.TaskStorage:
			ps := spec.Programs["reset_"+name]
			if coll.Programs["reset_"+name] == nil || ps == nil || ps.AttachTo != "task" {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// Release gives back a collection NewCollection handed out, once the
// probe has closed its links and read what it needs (its own descriptors
// may be closed or not): with KeepLoaded on it is emptied and kept for
// the next load of the same spec. Nothing for one not kept.
func Release(coll *ebpf.Collection) {
	if coll == nil {
		return
	}
	pool.Lock()
	defer pool.Unlock()
	i := slices.IndexFunc(pool.entries, func(e *pooled) bool { return e.busy && e.out == coll })
	if i < 0 {
		return
	}
	e := pool.entries[i]
	e.busy, e.out = false, nil
	if !pool.on {
		e.coll.Close()
		pool.entries = slices.Delete(pool.entries, i, i+1)
		return
	}
	if err := reset(e.spec, e.coll, e.replaced); err != nil {
		// Not as loaded: load anew next time.
		e.coll.Close()
		pool.entries = slices.Delete(pool.entries, i, i+1)
	}
}

// reset empties every map of coll back to what loading it made, but the
// replaced ones, which are another collection's.
func reset(spec *ebpf.CollectionSpec, coll *ebpf.Collection, replaced map[string]bool) error {
	// The data sections last: a program still finishing a run on another
	// CPU after its link closed sees the probe's stopped flag (set before
	// the links were closed) until then, and makes no new entry in what
	// was emptied.
	names := slices.SortedFunc(maps.Keys(coll.Maps), func(a, b string) int {
		return cmp.Or(cmp.Compare(b2i(strings.HasPrefix(a, ".")), b2i(strings.HasPrefix(b, "."))), cmp.Compare(a, b))
	})
	for _, name := range names {
		m := coll.Maps[name]
		if replaced[name] {
			continue
		}
		ms := spec.Maps[name]
		if ms == nil {
			return fmt.Errorf("map %s not in the spec", name)
		}
		if err := resetMap(name, ms, m, coll); err != nil {
			return fmt.Errorf("reset map %s: %w", name, err)
		}
	}
	return nil
}

func resetMap(name string, ms *ebpf.MapSpec, m *ebpf.Map, coll *ebpf.Collection) error {
	switch m.Type() {
	case ebpf.Array, ebpf.PerCPUArray:
		if m.Flags()&unix.BPF_F_RDONLY_PROG != 0 {
			// .rodata and other frozen maps: constants, which the
			// fingerprint already compared.
			return nil
		}
		return zeroArray(name, ms, m)
	case ebpf.Hash, ebpf.LRUHash, ebpf.PerCPUHash, ebpf.LRUCPUHash, ebpf.StackTrace:
		var keys [][]byte
		for {
			var prev any
			if len(keys) > 0 {
				prev = keys[len(keys)-1]
			}
			next := make([]byte, m.KeySize())
			err := m.NextKey(prev, next)
			if errors.Is(err, ebpf.ErrKeyNotExist) {
				break
			}
			if err != nil {
				return err
			}
			keys = append(keys, next)
			if len(keys) > int(m.MaxEntries())+1 {
				return errors.New("more keys than entries")
			}
		}
		for _, k := range keys {
			if err := m.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
				return err
			}
		}
		return putContents(ms, m)
	case ebpf.Queue:
		v := make([]byte, m.ValueSize())
		for range m.MaxEntries() + 1 {
			if err := m.LookupAndDelete(nil, v); errors.Is(err, ebpf.ErrKeyNotExist) {
				return nil
			} else if err != nil {
				return err
			}
		}
		return errors.New("more values than entries")
	case ebpf.RingBuf:
		r, err := ringbuf.NewReader(m)
		if err != nil {
			return err
		}
		defer r.Close()
		r.SetDeadline(time.Now())
		for range 1 << 20 {
			if _, err := r.Read(); err != nil {
				return nil
			}
		}
		return errors.New("ring buffer not drained")
	case ebpf.PerfEventArray:
		for i := range m.MaxEntries() {
			if err := m.Delete(i); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
				return err
			}
		}
		return nil
	case ebpf.TaskStorage:
		it, err := link.AttachIter(link.IterOptions{Program: coll.Programs["reset_"+name]})
		if err != nil {
			return err
		}
		defer it.Close()
		r, err := it.Open()
		if err != nil {
			return err
		}
		defer r.Close()
		_, err = io.Copy(io.Discard, r)
		return err
	}
	return fmt.Errorf("a map of type %s is not emptied", m.Type())
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// zeroArray sets every element of an array to its initial value: the
// spec's contents, zero for the rest.
func zeroArray(name string, ms *ebpf.MapSpec, m *ebpf.Map) error {
	switch {
	case strings.HasPrefix(name, "."):
		// A data section: mapped already, for its variables.
		mem, err := m.Memory()
		if err != nil {
			return err
		}
		if _, err := mem.WriteAt(make([]byte, mem.Size()), 0); err != nil {
			return err
		}
	case m.Type() == ebpf.Array && m.Flags()&unix.BPF_F_MMAPABLE != 0:
		// Mapped for the time it takes: a mapping kept would leave the
		// whole array (the threads' slots, 9 MiB) in the agent's
		// resident memory.
		page := os.Getpagesize()
		size := (int(m.MaxEntries())*((int(m.ValueSize())+7)/8*8) + page - 1) / page * page
		mem, err := unix.Mmap(m.FD(), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			return err
		}
		clear(mem)
		if err := unix.Munmap(mem); err != nil {
			return err
		}
	default:
		n, size := m.MaxEntries(), int(m.ValueSize())
		var zero any = make([]byte, size)
		if m.Type() == ebpf.PerCPUArray {
			ncpu, err := ebpf.PossibleCPU()
			if err != nil {
				return err
			}
			per := make([][]byte, ncpu)
			for i := range per {
				per[i] = make([]byte, size)
			}
			zero = per
		}
		for i := range n {
			if err := m.Update(i, zero, ebpf.UpdateExist); err != nil {
				return err
			}
		}
	}
	return putContents(ms, m)
}

// putContents writes a map spec's initial contents (a data section's bytes).
func putContents(ms *ebpf.MapSpec, m *ebpf.Map) error {
	for _, kv := range ms.Contents {
		if err := m.Update(kv.Key, kv.Value, ebpf.UpdateAny); err != nil {
			return err
		}
	}
	return nil
}

// progStats are a program's kernel statistics, with its ID.
func progStats(p *ebpf.Program) (ebpf.ProgramID, ebpf.ProgramStats, error) {
	info, err := p.Info()
	if err != nil {
		return 0, ebpf.ProgramStats{}, err
	}
	id, ok := info.ID()
	if !ok {
		return 0, ebpf.ProgramStats{}, errors.New("no program ID")
	}
	s, err := p.Stats()
	if err != nil {
		return 0, ebpf.ProgramStats{}, err
	}
	return id, *s, nil
}

// ProgStats are a program's kernel statistics (run count, run time,
// recursion misses) since its collection was loaded or taken from the
// pool: the ones to read, rather than Program.Stats, whose count a kept
// program carries on from its earlier uses.
func ProgStats(p *ebpf.Program) (*ebpf.ProgramStats, error) {
	pool.Lock()
	defer pool.Unlock()
	if len(pool.base) == 0 {
		return p.Stats()
	}
	id, s, err := progStats(p)
	if err != nil {
		return nil, err
	}
	if b, ok := pool.base[id]; ok {
		s.Runtime -= b.Runtime
		s.RunCount -= b.RunCount
		s.RecursionMisses -= b.RecursionMisses
	}
	return &s, nil
}
