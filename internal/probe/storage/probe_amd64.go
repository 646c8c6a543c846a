//go:build amd64

package storage

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/prometheus/procfs/blockdevice"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/probe"
	"github.com/perfsleuth/perfsleuth/internal/sqlitetrace"
	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// Probe is an attached storage probe. Stop it to read the result.
type Probe struct {
	cfg  Config
	coll *ebpf.Collection
	objs struct {
		storageMaps
		storageVariables
	}
	links  []link.Link
	notes  []string
	reader *ringbuf.Reader
	done   chan struct{}
	start  time.Time
	// diskstats is /proc/diskstats when the probe was armed.
	diskstats map[string]blockdevice.Diskstats
}

// hooks groups the programs by what they measure; a group whose
// tracepoints the kernel lacks is left out with a note.
var hooks = []struct {
	what  string
	progs []string
	// files: only with Config.Files (--storage). The page-cache hit ratio
	// and the pages dirtied are among them: their programs run for every
	// buffered read call and every page added or dirtied on the machine,
	// which cost the default observation 2-14% of cached 4 KiB reads and
	// appends (issue 21).
	files bool
}{
	{"block devices", []string{"block_rq_issue", "block_rq_complete", "block_rq_insert", "block_io_start", "block_rq_requeue", "block_rq_merge", "block_bio_backmerge", "block_bio_frontmerge"}, false},
	{"page-cache hit ratio", []string{"filemap_get_pages", "filemap_add"}, true},
	{"mmap faults", []string{"filemap_fault"}, false},
	{"readahead", []string{"sync_ra", "async_ra"}, false},
	{"pages dirtied", []string{"dirty_folio"}, true},
	{"the workload's files among the written back", []string{"dirty_inode_enqueue", "dirty_inode_start"}, false},
	{"dirty throttling", []string{"balance_dirty_pages"}, false},
	{"files", []string{"sys_enter", "sys_exit"}, true},
	{"asynchronous IO by io_uring", []string{"io_uring_complete"}, false},
	{"io_uring's queue depth", []string{"io_uring_submit_req"}, true},
}

// hookExists says whether the kernel has the BTF tracepoint prog attaches
// to, of the prototype the program was written for (why says so when it
// has another).
func hookExists(kernel *btf.Spec, prog *ebpf.ProgramSpec) (ok bool, why string) {
	if kernel == nil || !sysinfo.HasBTFTracepoint(kernel, prog.AttachTo) {
		return false, ""
	}
	// io_uring_complete took the CQE's fields one by one before 5.19.
	if params, ok := uringParams[prog.AttachTo]; ok {
		var td *btf.Typedef
		if kernel.TypeByName("btf_trace_"+prog.AttachTo, &td) != nil {
			return false, ""
		}
		ptr, ok := td.Type.(*btf.Pointer)
		if !ok {
			return false, ""
		}
		fp, ok := ptr.Target.(*btf.FuncProto)
		if !ok || len(fp.Params) != params {
			return false, "its arguments differ from this perfsleuth's (an older kernel)"
		}
	}
	return true, ""
}

// uringParams are the tracepoints whose prototype changed, with the
// number of parameters (the hidden first one included) the programs take.
var uringParams = map[string]int{"io_uring_complete": 4, "io_uring_submit_req": 2}

// optionalHooks may be missing without their group: a request starts at
// block_io_start or block_rq_insert, whichever the kernel has, or at issue.
var optionalHooks = map[string]string{
	"block_rq_insert":      "requests start at the scheduler's insert",
	"block_io_start":       "requests start at the scheduler's insert",
	"block_rq_requeue":     "a requeued request's service includes its time waiting to be issued again",
	"block_rq_merge":       "requests merged into another are not counted as merges",
	"block_bio_backmerge":  "merges are not counted",
	"block_bio_frontmerge": "merges are not counted",
}

// Start loads the probe and attaches it to the processes in tracked, the
// timeacct probe's map (threads is its per-thread accounting).
func Start(cfg Config, shared probe.Shared) (_ *Probe, err error) {
	if !shared.Complete() {
		return nil, errors.New("storage: needs the time-accounting probe's maps")
	}
	p := &Probe{cfg: cfg, done: make(chan struct{})}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	spec, err := loadStorage()
	if err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	if err := spec.Variables["want_files"].Set(cfg.Files); err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	kernel, kerr := sysinfo.KernelSpec()
	// Requests start at block_io_start, or at block_rq_insert on kernels
	// without it (before 6.5).
	haveIOStart := kerr == nil && sysinfo.HasBTFTracepoint(kernel, "block_io_start")
	if err := spec.Variables["have_io_start"].Set(haveIOStart); err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	var kernelOrNil *btf.Spec
	if kerr == nil {
		kernelOrNil = kernel
	}
	for _, g := range hooks {
		if g.files && !cfg.Files {
			for _, n := range g.progs {
				delete(spec.Programs, n)
			}
			continue
		}
		var missing, whys []string
		for _, n := range g.progs {
			tp := spec.Programs[n].AttachTo
			ok, why := hookExists(kernelOrNil, spec.Programs[n])
			if why != "" && !slices.Contains(whys, why) {
				whys = append(whys, why)
			}
			switch note, optional := optionalHooks[n]; {
			case ok:
			case optional:
				delete(spec.Programs, n)
				p.notes = append(p.notes, "this kernel has no "+tp+" tracepoint: "+note)
			default:
				missing = append(missing, tp)
			}
		}
		if len(missing) == 0 {
			continue
		}
		for _, n := range g.progs {
			delete(spec.Programs, n)
		}
		note := fmt.Sprintf("%s not measured: this kernel has no %v tracepoint", g.what, missing)
		if len(whys) > 0 {
			note = fmt.Sprintf("%s not measured: %v: %s", g.what, missing, strings.Join(whys, "; "))
		}
		p.notes = append(p.notes, note)
	}
	if !cfg.Files {
		spec.Maps["files"].MaxEntries = 1
		spec.Maps["dirs"].MaxEntries = 1
		spec.Maps["folded"].MaxEntries = 1
		spec.Maps["positions"].MaxEntries = 1
		spec.Maps["rings"].MaxEntries = 1
		spec.Maps["ring_reqs"].MaxEntries = 1
		spec.Maps["events"].MaxEntries = uint32(os.Getpagesize())
	}
	coll, err := probe.NewCollection("storage", spec, ebpf.CollectionOptions{
		MapReplacements: shared.Replacements(spec),
	})
	if err != nil {
		return nil, err
	}
	p.coll = coll
	if err := coll.Assign(&p.objs); err != nil {
		return nil, fmt.Errorf("load storage: %w", err)
	}
	if cfg.Files {
		// The catch-all entry of dirs (bpf/storage.h), which the programs
		// do not make: a call on a file whose directory finds dirs full is
		// counted there.
		if err := p.objs.Dirs.Put(storageStFileKey{}, storageStFile{}); err != nil {
			return nil, fmt.Errorf("storage: map dirs: %w", err)
		}
		if p.reader, err = ringbuf.NewReader(p.objs.Events); err != nil {
			return nil, fmt.Errorf("storage: ring buffer: %w", err)
		}
		go p.readEvents()
	} else {
		close(p.done)
	}
	// Completions first, so that no request is counted in flight forever.
	order := []string{"block_rq_complete", "block_rq_merge", "block_rq_requeue", "block_rq_issue", "block_rq_insert", "block_io_start", "block_bio_backmerge", "block_bio_frontmerge",
		"filemap_get_pages", "filemap_add", "filemap_fault", "sync_ra", "async_ra", "dirty_folio", "dirty_inode_enqueue", "dirty_inode_start", "balance_dirty_pages", "sys_exit", "sys_enter",
		"io_uring_complete", "io_uring_submit_req"}
	for _, n := range order {
		prog := coll.Programs[n]
		if prog == nil {
			continue
		}
		l, err := link.AttachTracing(link.TracingOptions{Program: prog})
		if err != nil {
			return nil, fmt.Errorf("attach %s: %w", n, err)
		}
		p.links = append(p.links, l)
	}
	// Armed: requests that start from now on are measured, and
	// completions from now on are counted. The window and /proc/diskstats'
	// counts start here too, read right before, so that only what
	// completes in between is in diskstats and not in the probe.
	p.diskstats = readDiskstats()
	p.start = time.Now()
	if err := p.objs.ArmedNs.Set(probe.MonotonicNs()); err != nil {
		return nil, fmt.Errorf("storage: arm: %w", err)
	}
	return p, nil
}

// pollEvery is how often the SQLite events are read from the ring buffer.
const pollEvery = 50 * time.Millisecond

// readEvents passes the SQLite events to cfg.OnEvent until the reader is
// drained and closed.
func (p *Probe) readEvents() {
	defer close(p.done)
	// One record buffer, and the sample read in place: this runs for every
	// SQLite call, on the CPUs the workload uses. The layout is
	// bpf/storage.h's, little-endian on amd64.
	//
	// The probe submits without waking the reader (bpf/storage.h
	// ST_RING_WAKE), so the reader polls: each deadline returns what is in
	// the ring, then the next one is set.
	var rec ringbuf.Record
	devs := map[uint32]string{} // device names, formatted once
	p.reader.SetDeadline(time.Now().Add(pollEvery))
	for {
		if err := p.reader.ReadInto(&rec); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				p.reader.SetDeadline(time.Now().Add(pollEvery))
				continue
			}
			return // closed, or drained after Stop flushed it
		}
		if p.cfg.OnEvent == nil || len(rec.RawSample) < int(unsafe.Sizeof(storageStEvent{})) {
			continue
		}
		raw := (*storageStEvent)(unsafe.Pointer(&rec.RawSample[0]))
		n := int(min(max(raw.Len, 0), int64(len(raw.Head))))
		dev, ok := devs[raw.Dev]
		if !ok {
			dev = sysinfo.DevString(raw.Dev)
			devs[raw.Dev] = dev
		}
		p.cfg.OnEvent(sqlitetrace.Event{TsNs: raw.Ts, Dev: dev, Ino: raw.Ino, TID: int(raw.Tid), Op: int(raw.Op), Kind: int(raw.Kind),
			Off: raw.Off, Len: raw.Len, Head: raw.Head[:n], B100: raw.B100, Has100: raw.Has100 != 0,
			StmtID: raw.StmtId})
	}
}

// Stop ends the window, detaches the probe and reads what it counted.
func (p *Probe) Stop() (*model.StorageIO, error) {
	if p == nil || p.coll == nil {
		return nil, errors.New("storage: probe not started")
	}
	defer p.close()
	if err := p.sweep(); err != nil {
		p.notes = append(p.notes, err.Error())
	}
	if err := p.objs.Stopped.Set(uint32(1)); err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	// /proc/diskstats at once: the window it covers is the programs'.
	end := readDiskstats()
	window := time.Since(p.start)
	probe.CloseLinks(p.links)
	p.links = nil
	if p.reader != nil {
		// Flush makes the reader return what is left, then ErrFlushed.
		p.reader.Flush()
		<-p.done
	}
	st, err := p.read(window, end)
	if st != nil {
		calls, cerr := p.statementCalls()
		st.StatementCalls = calls
		err = errors.Join(err, cerr)
	}
	return st, err
}

// statementCalls sums stmt_io over the CPUs: every file's calls by the
// statement each was made under (the statement probe's ids; empty
// without it).
func (p *Probe) statementCalls() (map[uint32]*model.SQLCalls, error) {
	out := map[uint32]*model.SQLCalls{}
	// One batch of the whole array: its 4,096 entries one lookup at a
	// time were 8,192 syscalls at every run's end, with or without the
	// statement probe.
	m := p.objs.StmtIo
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		return out, fmt.Errorf("storage: map stmt_io: %w", err)
	}
	keys := make([]uint32, m.MaxEntries())
	per := make([]storageSqIo, len(keys)*cpus)
	var cursor ebpf.MapBatchCursor
	n, err := m.BatchLookup(&cursor, keys, per, nil)
	if err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return out, fmt.Errorf("storage: map stmt_io: %w", err)
	}
	for i, id := range keys[:n] {
		var c model.SQLCalls
		var rns, wns, sns uint64
		for _, x := range per[i*cpus : (i+1)*cpus] {
			c.Reads += int64(x.Reads)
			c.Writes += int64(x.Writes)
			c.Syncs += int64(x.Syncs)
			c.ReadBytes += int64(x.ReadBytes)
			c.WriteBytes += int64(x.WriteBytes)
			rns, wns, sns = rns+x.ReadNs, wns+x.WriteNs, sns+x.SyncNs
			c.ReadMissPages += int64(x.ReadAdded)
			c.Faults += int64(x.Faults)
		}
		if c.Reads+c.Writes+c.Syncs+c.ReadMissPages+c.Faults == 0 {
			continue
		}
		c.ReadSec, c.WriteSec, c.SyncSec = float64(rns)/1e9, float64(wns)/1e9, float64(sns)/1e9
		out[id] = &c
	}
	return out, nil
}

func (p *Probe) close() {
	for _, l := range p.links {
		l.Close()
	}
	p.links = nil
	if p.reader != nil {
		p.reader.Close()
		<-p.done
		p.reader = nil
	}
	if p.coll != nil {
		p.coll.Close()
		// After the links and the reader: a kept collection is emptied
		// for its next use.
		probe.Release(p.coll)
		p.coll = nil
	}
}

func (p *Probe) read(window time.Duration, end map[string]blockdevice.Diskstats) (*model.StorageIO, error) {
	st := &model.StorageIO{WindowSec: window.Seconds(), FilesTraced: p.cfg.Files, Notes: slices.Clone(p.notes)}
	var errs []error
	c, err := p.counters()
	if err != nil {
		errs = append(errs, err)
	}
	for _, r := range c.Runs {
		st.ProbeRuns += int64(r)
	}
	st.ProbeCPUSec, st.Programs = p.cost(c)
	if p.cfg.Costs == nil {
		note := "the storage programs' cost is underestimated: the runs their filters stopped were not calibrated, only the rest was timed"
		if p.cfg.CostsNote != "" {
			note += " (" + p.cfg.CostsNote + ")"
		}
		st.Notes = append(st.Notes, note)
	}
	st.Dropped = model.StorageDropped{Requests: int64(c.RqDropped), FileOps: int64(c.FileDropped), SQLiteEvents: int64(c.EvDropped),
		MissedRuns: probe.MissedRuns(maps.All(p.coll.Programs)), ThreadFiles: int64(c.TfDropped)}
	if p.cfg.Files {
		st.MaxFiles = MaxFiles
		st.FoldedCalls = int64(c.FileFolded)
	}
	missed, drift, driftNote, err := p.leftovers()
	if err != nil {
		errs = append(errs, err)
	}
	if driftNote != "" {
		st.Notes = append(st.Notes, driftNote)
	}
	if st.Devices, err = p.readDevices(window, end, missed); err != nil {
		errs = append(errs, err)
	}
	for i := range st.Devices {
		st.Devices[i].DriverDrift = drift[st.Devices[i].Dev]
	}
	for _, d := range st.Devices {
		for _, o := range d.Ops {
			st.Dropped.Unseen += o.Unseen
			st.Dropped.Missed += o.Missed
		}
	}
	if st.Cache, err = p.readCache(); err != nil {
		errs = append(errs, err)
	}
	if p.cfg.Files {
		if st.Files, err = p.readFiles(); err != nil {
			errs = append(errs, err)
		}
		if st.FoldedCalls > 0 {
			dirs := 0
			for _, f := range st.Files {
				if f.Folded {
					dirs++
				}
			}
			note := fmt.Sprintf("%s file calls were counted by directory (%d entries marked as directories in the files table): past %s files the probe keeps no file's own counts",
				units.FormatCount(st.FoldedCalls), dirs, units.FormatCount(MaxFiles))
			if c.FoldUncounted > 0 {
				note += fmt.Sprintf("; %s files were not counted among their directory's files (the set of folded files was full)", units.FormatCount(int64(c.FoldUncounted)))
			}
			st.Notes = append(st.Notes, note)
		}
	} else {
		st.Notes = append(st.Notes, "per-file IO, the page-cache hit ratio and pages dirtied, SQLite pages and libaio's asynchronous IO not collected: run with --storage (it hooks the syscalls and every page added or dirtied; docs/probes.md gives its cost)")
	}
	if st.AsyncIO, err = p.readAsyncIO(window); err != nil {
		errs = append(errs, err)
	}
	if c.RingDropped > 0 {
		st.Notes = append(st.Notes, fmt.Sprintf("%s io_uring reads and writes were not followed in flight (the probe's rings or requests were full): their queue depth leaves them out", units.FormatCount(int64(c.RingDropped))))
	}
	if st.Cache != nil {
		for _, d := range st.Devices {
			for _, o := range d.Ops {
				if o.Op == "write" {
					st.Cache.WrittenBackBytes += o.WorkloadBytes + o.WritebackBytes
				}
			}
		}
	}
	return st, errors.Join(errs...)
}

// cost estimates the CPU time the programs took: every run at its group's
// calibrated cost of a run stopped by the filter, plus the time the runs
// past it took (timed in the kernel, all or a sample).
func (p *Probe) cost(c storageStCounters) (float64, []model.ProgramCost) {
	var ns float64
	var progs []model.ProgramCost
	for i := range NumPrograms {
		if c.Runs[i] == 0 {
			continue
		}
		pc := model.ProgramCost{Name: "storage/" + ProgramNames[i], Runs: int64(c.Runs[i]), TrackedRuns: int64(c.Worked[i])}
		if p.cfg.Costs != nil {
			pc.UntrackedNs = p.cfg.Costs.UntrackedNs[i]
		}
		// The frequent programs time a sample of their runs.
		if c.Timed[i] > 0 {
			pc.TrackedNs = pc.UntrackedNs + float64(c.WorkNs[i])/float64(c.Timed[i])
			ns += float64(c.WorkNs[i]) / float64(c.Timed[i]) * float64(c.Worked[i])
		}
		ns += float64(c.Runs[i]) * pc.UntrackedNs
		progs = append(progs, pc)
	}
	return ns / 1e9, progs
}

func (p *Probe) counters() (storageStCounters, error) {
	var sum storageStCounters
	var per []storageStCounters
	if err := p.objs.Counters.Lookup(uint32(0), &per); err != nil {
		return sum, fmt.Errorf("map counters: %w", err)
	}
	for _, c := range per {
		for i := range sum.Runs {
			sum.Runs[i] += c.Runs[i]
			sum.Worked[i] += c.Worked[i]
			sum.Timed[i] += c.Timed[i]
			sum.WorkNs[i] += c.WorkNs[i]
		}
		sum.RqDropped += c.RqDropped
		sum.FileDropped += c.FileDropped
		sum.EvDropped += c.EvDropped
		sum.TfDropped += c.TfDropped
		sum.FileFolded += c.FileFolded
		sum.FoldUncounted += c.FoldUncounted
		sum.RingDropped += c.RingDropped
	}
	return sum, nil
}

func (p *Probe) readDevices(window time.Duration, end map[string]blockdevice.Diskstats, missed map[storageStDevKey]int64) ([]model.BlockDevice, error) {
	byDev := map[uint32]*model.BlockDevice{}
	var k storageStDevKey
	var v storageStDevStats
	it := p.objs.Devs.Iterate()
	for it.Next(&k, &v) {
		if v.Requests == 0 && v.Merges == 0 && v.Unseen == 0 && v.Missed == 0 && missed[k] == 0 {
			continue
		}
		d := byDev[k.Dev]
		if d == nil {
			d = &model.BlockDevice{Dev: sysinfo.DevString(k.Dev), Name: sysinfo.BlockName(sysinfo.DevString(k.Dev))}
			byDev[k.Dev] = d
		}
		op := model.BlockOp{Op: Ops[min(int(k.Op), len(Ops)-1)], Requests: int64(v.Requests), Bytes: int64(v.Bytes), Merges: int64(v.Merges),
			Issued: int64(v.Issued), Preflush: int64(v.Preflush), FUA: int64(v.Fua), Errors: int64(v.Errors),
			Unseen: int64(v.Unseen), UnseenBytes: int64(v.UnseenBytes), Missed: int64(v.Missed) + missed[k],
			WorkloadRequests: int64(v.OwnRequests), WorkloadBytes: int64(v.OwnBytes), WritebackRequests: int64(v.WbRequests), WritebackBytes: int64(v.WbBytes),
			Size: ranges(v.SizeSlots[:], 1), Queue: ranges(v.QueueSlots[:], 1000), Service: ranges(v.ServiceSlots[:], 1000), Depth: ranges(v.DepthSlots[:], 1),
			WorkloadDepth: ranges(v.OwnDepthSlots[:], 1)}
		if v.Requests > 0 {
			n := float64(v.Requests)
			op.QueueMeanSec = float64(v.QueueNs) / n / 1e9
			op.ServiceMeanSec = float64(v.ServiceNs) / n / 1e9
			op.LatencyMeanSec = float64(v.LatencyNs) / n / 1e9
		}
		if v.OwnRequests > 0 {
			n := float64(v.OwnRequests)
			op.WorkloadServiceMeanSec = float64(v.OwnServiceNs) / n / 1e9
			op.WorkloadLatencyMeanSec = float64(v.OwnLatencyNs) / n / 1e9
		}
		d.Ops = append(d.Ops, op)
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("map devs: %w", err)
	}
	var dev uint32
	var disk storageStDisk
	dit := p.objs.Disks.Iterate()
	for dit.Next(&dev, &disk) {
		d := byDev[dev]
		if d == nil {
			continue
		}
		// Requests still in the driver at the stop are not in it: a few
		// hundred microseconds at most, against a window of seconds.
		sec := float64(disk.BusyNs) / 1e9
		d.DriverBusySec = &sec
		if window > 0 {
			pct := min(100, sec/window.Seconds()*100)
			d.DriverUtilPct = &pct
		}
	}
	if err := dit.Err(); err != nil {
		return nil, fmt.Errorf("map disks: %w", err)
	}
	var out []model.BlockDevice
	for _, d := range byDev {
		if a, ok := p.diskstats[d.Name]; ok {
			if b, ok := end[d.Name]; ok {
				delta := diskstatsDelta(a, b)
				d.Diskstats = &delta
				d.BusySec = float64(delta.IOTicksMs) / 1000
				if window > 0 {
					d.UtilPct = min(100, d.BusySec/window.Seconds()*100)
				}
			}
		}
		slices.SortFunc(d.Ops, func(a, b model.BlockOp) int { return slices.Index(Ops[:], a.Op) - slices.Index(Ops[:], b.Op) })
		out = append(out, *d)
	}
	slices.SortFunc(out, func(a, b model.BlockDevice) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// readAsyncIO sums the asynchronous-IO counters over the CPUs, with
// io_uring's rings (readRings); nil when the workload made none (or the
// programs are not loaded).
func (p *Probe) readAsyncIO(window time.Duration) ([]model.AsyncIO, error) {
	var out []model.AsyncIO
	for kind, name := range []string{"libaio", "io_uring"} {
		var per []storageStAio
		if err := p.objs.Aio.Lookup(uint32(kind), &per); err != nil {
			return nil, fmt.Errorf("map aio: %w", err)
		}
		a := model.AsyncIO{Interface: name}
		for _, c := range per {
			a.Reads += int64(c.Reads)
			a.ReadBytes += int64(c.ReadBytes)
			a.Writes += int64(c.Writes)
			a.WriteBytes += int64(c.WriteBytes)
			a.Errors += int64(c.Errors)
			a.Uncounted += int64(c.Uncounted)
		}
		if name == "io_uring" {
			rings, err := p.readRings(window)
			if err != nil {
				return nil, err
			}
			a.Rings = rings
		}
		if a.Reads+a.Writes+a.Errors+a.Uncounted > 0 || len(a.Rings) > 0 {
			out = append(out, a)
		}
	}
	return out, nil
}

// readRings reads the workload's io_uring rings (--storage): each ring's
// reads and writes submitted and completed, the most in flight at once,
// and the mean in flight over the window (Little's law: their summed
// time in flight over the window's length); nil without --storage.
func (p *Probe) readRings(window time.Duration) ([]model.URing, error) {
	if !p.cfg.Files || p.objs.Rings == nil {
		return nil, nil
	}
	var (
		out  []model.URing
		key  uint64
		ring storageStRing
	)
	it := p.objs.Rings.Iterate()
	for it.Next(&key, &ring) {
		matched := int64(ring.Completed) - int64(ring.Unmatched)
		r := model.URing{Pid: int(ring.Tgid), Submitted: int64(ring.Submitted), Completed: int64(ring.Completed),
			InFlightMax: int64(ring.MaxInflight), Unmatched: int64(ring.Unmatched)}
		if window > 0 {
			r.InFlightMean = float64(ring.FlightNs) / float64(window.Nanoseconds())
		}
		if matched > 0 {
			r.LatencyMeanSec = float64(ring.FlightNs) / 1e9 / float64(matched)
		}
		out = append(out, r)
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("map rings: %w", err)
	}
	slices.SortFunc(out, func(a, b model.URing) int { return cmp.Compare(b.Submitted, a.Submitted) })
	return out, nil
}

// readDiskstats reads /proc/diskstats by device name; nil when it cannot.
func readDiskstats() map[string]blockdevice.Diskstats {
	fs, err := blockdevice.NewFS("/proc", "/sys")
	if err != nil {
		return nil
	}
	stats, err := fs.ProcDiskstats()
	if err != nil {
		return nil
	}
	out := make(map[string]blockdevice.Diskstats, len(stats))
	for _, s := range stats {
		out[s.DeviceName] = s
	}
	return out
}

// diskstatsDelta is what a disk's counters moved by from a to b.
func diskstatsDelta(a, b blockdevice.Diskstats) model.DiskstatsDelta {
	d := func(x, y uint64) int64 {
		if y < x {
			return 0
		}
		return int64(y - x)
	}
	return model.DiskstatsDelta{
		Reads: d(a.ReadIOs, b.ReadIOs), Writes: d(a.WriteIOs, b.WriteIOs), Discards: d(a.DiscardIOs, b.DiscardIOs),
		Flushes:   d(a.FlushRequestsCompleted, b.FlushRequestsCompleted),
		ReadBytes: d(a.ReadSectors, b.ReadSectors) * 512, WriteBytes: d(a.WriteSectors, b.WriteSectors) * 512,
		DiscardBytes: d(a.DiscardSectors, b.DiscardSectors) * 512,
		ReadMerges:   d(a.ReadMerges, b.ReadMerges), WriteMerges: d(a.WriteMerges, b.WriteMerges),
		IOTicksMs: d(a.IOsTotalTicks, b.IOsTotalTicks),
	}
}

// leftovers looks at the request entries left when the probe stopped. A
// disk's count of requests in the driver must equal the entries that say
// they are (a note says so if not: the counts drifted). And on a disk with
// nothing in flight any more (/sys/block/DISK/inflight), every entry left
// of a request started in the window is a completion the probe did not
// see: missed, per disk and op. drift is each drifted disk's count less
// its entries in the driver, by "major:minor".
func (p *Probe) leftovers() (missed map[storageStDevKey]int64, drift map[string]int64, note string, err error) {
	inDriver := map[uint32]int64{}
	left := map[storageStDevKey]int64{}
	var key uint64
	var r storageStRq
	it := p.objs.Rqs.Iterate()
	for it.Next(&key, &r) {
		if r.Flags&stRqInDriver != 0 {
			inDriver[r.Dev]++
		}
		if r.Flags&stRqPre == 0 {
			left[storageStDevKey{Dev: r.Dev, Op: r.Op}]++
		}
	}
	if err := it.Err(); err != nil {
		return nil, nil, "", fmt.Errorf("map rqs: %w", err)
	}
	var dev uint32
	var d storageStDisk
	var drifted []string
	drift = map[string]int64{}
	dit := p.objs.Disks.Iterate()
	for dit.Next(&dev, &d) {
		if d.Issued != inDriver[dev] {
			drift[sysinfo.DevString(dev)] = d.Issued - inDriver[dev]
			drifted = append(drifted, fmt.Sprintf("%s counted %d in the driver for %d requests", sysinfo.BlockName(sysinfo.DevString(dev)), d.Issued, inDriver[dev]))
		}
	}
	if err := dit.Err(); err != nil {
		return nil, nil, "", fmt.Errorf("map disks: %w", err)
	}
	if len(drifted) > 0 {
		note = "the block probe's in-driver counts drifted (" + strings.Join(drifted, "; ") + "): the depth histograms are off by that much"
	}
	missed = map[storageStDevKey]int64{}
	for k, n := range left {
		if sysinfo.DisksInFlight([]string{sysinfo.BlockName(sysinfo.DevString(k.Dev))}) == 0 {
			missed[k] = n
		}
	}
	return missed, drift, note, nil
}

// stRqInDriver and stRqPre are ST_RQ_IN_DRIVER and ST_RQ_PRE of
// bpf/storage.h.
const (
	stRqInDriver = 4
	stRqPre      = 1
)

// readCache sums the page-cache counters (the programs' runs are in
// counters, with the other programs').
func (p *Probe) readCache() (*model.PageCache, error) {
	loaded := false
	for _, n := range cachePrograms {
		loaded = loaded || p.coll.Programs[n] != nil
	}
	if !loaded {
		return nil, nil
	}
	var per []storageStCache
	if err := p.objs.Cache.Lookup(uint32(0), &per); err != nil {
		return nil, fmt.Errorf("map cache: %w", err)
	}
	var s storageStCache
	for _, c := range per {
		s.Lookups += c.Lookups
		s.ReadAdded += c.ReadAdded
		s.OtherAdded += c.OtherAdded
		s.FaultLookups += c.FaultLookups
		s.RaSync += c.RaSync
		s.RaAsync += c.RaAsync
		s.Dirtied += c.Dirtied
		s.Throttled += c.Throttled
		s.PauseJiffies += c.PauseJiffies
	}
	pc := &model.PageCache{Lookups: int64(s.Lookups), ReadAdded: int64(s.ReadAdded), HitRatio: hitRatio(int64(s.Lookups), int64(s.ReadAdded)),
		OtherAdded: int64(s.OtherAdded), FaultLookups: int64(s.FaultLookups), ReadaheadSync: int64(s.RaSync), ReadaheadAsync: int64(s.RaAsync),
		Dirtied: int64(s.Dirtied), Throttled: int64(s.Throttled)}
	if p.coll.Programs["filemap_get_pages"] == nil || p.coll.Programs["dirty_folio"] == nil {
		// Not counted, rather than none: the per-page programs ran only
		// with --storage (or the kernel lacks them, which a note says).
		pc.PagesNotCounted = true
		pc.Lookups, pc.ReadAdded, pc.OtherAdded, pc.Dirtied, pc.HitRatio = 0, 0, 0, 0, -1
	}
	if hz := sysinfo.KernelHZ(); hz > 0 {
		pc.ThrottledSec = float64(s.PauseJiffies) / float64(hz)
	} else if s.PauseJiffies > 0 {
		pc.ThrottledSec = -1
	}
	return pc, nil
}

func (p *Probe) readFiles() ([]model.FileIO, error) {
	mounts := sysinfo.DeviceMounts()
	var k storageStFileKey
	var f storageStFile
	var out []model.FileIO
	var names []probe.FileName
	it := p.objs.Files.Iterate()
	for it.Next(&k, &f) {
		if f.Ops[0]+f.Ops[1]+f.Syncs+f.Errors == 0 {
			continue
		}
		fi := fileIO(mounts, k, &f)
		out = append(out, fi)
		names = append(names, probe.FileName{Path: fi.Path, Dev: fi.Dev, Ino: fi.Ino, Gen: f.Generation, Deleted: fi.Deleted})
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("map files: %w", err)
	}
	probe.FinalPaths(names)
	for i, n := range names {
		out[i].Path, out[i].FirstPath, out[i].Gone = n.Path, n.FirstPath, n.Gone
	}
	out = mergeByPath(out)
	folded, err := p.readDirs(mounts)
	if err != nil {
		return nil, err
	}
	out = append(out, folded...)
	slices.SortFunc(out, func(a, b model.FileIO) int {
		ta, tb := a.Reads.CallSec+a.Writes.CallSec+a.SyncSec, b.Reads.CallSec+b.Writes.CallSec+b.SyncSec
		switch {
		case ta > tb:
			return -1
		case ta < tb:
			return 1
		}
		return strings.Compare(a.Path, b.Path)
	})
	return out, nil
}

// MaxFiles is how many files the probe counts one by one: past them, a
// file's calls are counted in its directory's entry (readDirs).
const MaxFiles = 4096

// readDirs lists the directories' entries (bpf/storage.h dirs): the calls
// on files that found the map of files full, by directory.
func (p *Probe) readDirs(mounts map[string]string) ([]model.FileIO, error) {
	var k storageStFileKey
	var f storageStFile
	var out []model.FileIO
	it := p.objs.Dirs.Iterate()
	for it.Next(&k, &f) {
		if f.Ops[0]+f.Ops[1]+f.Syncs+f.Errors == 0 {
			continue
		}
		fi := fileIO(mounts, k, &f)
		fi.Folded = true
		fi.FoldedFiles = int64(f.Files)
		if k.Ino == 0 && k.Dev == 0 {
			fi.Path, fi.Dev = OtherDirectories, ""
		}
		out = append(out, fi)
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("map dirs: %w", err)
	}
	return out, nil
}

// OtherDirectories is the path of the entry of folded files whose
// directory found the map of directories full too.
const OtherDirectories = "(other directories)"

// fileIO is the counts of one entry of files or dirs.
func fileIO(mounts map[string]string, k storageStFileKey, f *storageStFile) model.FileIO {
	dev := sysinfo.DevString(k.Dev)
	fi := model.FileIO{Path: probe.PathOf(mounts[dev], dev, f.Names, f.Depth, f.Truncated != 0), Dev: dev, Ino: k.Ino,
		Deleted: f.Unlinked != 0, PID: int(f.Tgid), SQLite: sqlitetrace.KindNames[int(f.Kind)], Syncs: int64(f.Syncs), SyncSec: float64(f.SyncNs) / 1e9,
		BlockedSec: float64(f.BlockedNs) / 1e9, LockSec: float64(f.LockNs) / 1e9, Errors: int64(f.Errors), Instances: 1}
	for i, ops := range []*model.FileOps{&fi.Reads, &fi.Writes} {
		*ops = model.FileOps{Count: int64(f.Ops[i]), Bytes: int64(f.Bytes[i]), Sequential: int64(f.Seq[i]), Random: int64(f.Random[i]),
			Pattern: pattern(int64(f.Seq[i]), int64(f.Random[i])), Threads: int64(f.Threads[i]), CallSec: float64(f.CallNs[i]) / 1e9, Sizes: ranges(f.SizeSlots[i][:], 1)}
		ops.BusySec = float64(f.BusyNs[i]) / 1e9
		ops.Concurrency = concurrency(float64(f.BusyCallNs[i])/1e9, ops.BusySec)
	}
	return fi
}

// sweep runs the sweep program once over the requests' map: the
// completions the probe missed that no later issue found (bpf/storage.bpf.c)
// are counted missed, so that none holds a disk's depth up and measured +
// unseen + missed is what diskstats counts. Run before the programs stop,
// so that a request completing meanwhile is either seen or found.
func (p *Probe) sweep() error {
	prog := p.coll.Programs["sweep"]
	if prog == nil {
		return errors.New("storage: the completions missed at the end were not looked for (no sweep program)")
	}
	if err := probe.RunIter(link.IterOptions{Program: prog, Map: p.objs.Rqs}); err != nil {
		return fmt.Errorf("storage: the completions missed at the end were not looked for (sweep: %v): a disk's depth and missed count may be off by them", err)
	}
	return nil
}

// programObject is the probe's BPF object: a calibration is for its programs.
var programObject = _StorageBytes

// SQLThreads is the map of each thread's current SQLite statement that the
// statement probe fills (sqlprobe is loaded with it) and the SQLite file
// events read.
func (p *Probe) SQLThreads() *ebpf.Map { return p.objs.SqlThreads }
