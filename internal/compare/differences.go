package compare

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// Difference groups, in the order they are listed.
const (
	GroupAccounting  = "time accounting"
	GroupSyncs       = "syncs"
	GroupCache       = "page cache"
	GroupConcurrency = "concurrency"
	GroupSwitches    = "context switches"
	GroupBlock       = "block requests"
)

// Units of a Difference's values.
const (
	UnitShare   = "share"   // of the busy threads' time, 0 to 1
	UnitRatio   = "ratio"   // 0 to 1
	UnitCount   = "count"   // per unit of work (Per)
	UnitSeconds = "s"       // a mean latency
	UnitBytes   = "bytes"   // a mean size
	UnitThreads = "threads" // a number of threads
)

// Difference is one measured quantity of both runs, and whether it differs
// beyond its threshold.
type Difference struct {
	Group string `json:"group"`
	// ID is a stable dotted id, e.g. "sync.fdatasync.calls".
	ID   string `json:"id"`
	Name string `json:"name"`
	Unit string `json:"unit"`
	// Per is the unit of work a count is divided by ("transaction", "op",
	// "run", or "second" when the runs' units differ).
	Per string  `json:"per,omitempty"`
	A   float64 `json:"a"`
	B   float64 `json:"b"`
	// Judged is false when the runs have too little of it to judge (Note
	// says why); Differs is then false.
	Judged  bool `json:"judged"`
	Differs bool `json:"differs"`
	// Rule is the threshold, in words (the constants in thresholds.go).
	Rule string `json:"rule"`
	Note string `json:"note,omitempty"`
}

// differences sets side by side what both records measured.
func differences(a, b *model.Run) []Difference {
	var out []Difference
	wa, wb, haveWork := pairWork(a, b)
	out = append(out, accountingRows(a, b)...)
	if haveWork {
		out = append(out, syncRows(a, b, wa, wb)...)
		out = append(out, cacheRows(a, b, wa, wb)...)
	}
	out = append(out, concurrencyRows(a, b)...)
	if haveWork {
		out = append(out, switchRows(a, b, wa, wb)...)
		out = append(out, blockRows(a, b, wa, wb)...)
		out = append(out, sqlRows(a, b, wa, wb)...)
	}
	return out
}

var (
	shareRule   = fmt.Sprintf("differs by %.0f points or more, when both runs' busy threads were accounted for %gs or more", shareGap*100, accountingMinBusySec)
	countRule   = fmt.Sprintf("differs at %s apart or more, when one run has %d or more", times(countRatio), countMinEvents)
	preemptRule = fmt.Sprintf("differs at %s apart or more, when one run has %s or more (other tasks cause them)", times(countRatio), units.FormatCount(preemptMinEvents))
	latencyRule = fmt.Sprintf("differs at %s apart or more, when both runs have %s samples or more", times(latencyRatio), units.FormatCount(latencyMinSamples))
	sizeRule    = fmt.Sprintf("differs at %s apart or more, when both runs have %d requests or more", times(sizeRatio), countMinEvents)
	hitRule     = fmt.Sprintf("differs by %.0f points or more, when both runs looked up %s pages or more", hitRatioGap*100, units.FormatCount(cacheMinLookups))
	atOnceRule  = fmt.Sprintf("differs by %.1f threads or more", concurrencyGap)
	threadRule  = fmt.Sprintf("differs at %s apart or more", times(countRatio))
)

func accountingRows(a, b *model.Run) []Difference {
	ta, tb := a.TimeAccounting, b.TimeAccounting
	if ta == nil || tb == nil || ta.Source != tb.Source {
		return nil
	}
	busyA, busyB := busySeconds(ta), busySeconds(tb)
	judged := busyA >= accountingMinBusySec && busyB >= accountingMinBusySec
	note := ""
	if !judged {
		note = fmt.Sprintf("not judged: the busy threads were accounted for %s (A) and %s (B); under %gs set-up and tear-down weigh as much as the work", secWords(busyA), secWords(busyB), accountingMinBusySec)
	}
	var out []Difference
	for _, c := range model.Categories {
		sa, sb := share(ta, c), share(tb, c)
		if ta.Total[c] == 0 && tb.Total[c] == 0 {
			continue
		}
		d := Difference{Group: GroupAccounting, ID: "accounting." + c, Name: c, Unit: UnitShare, A: sa, B: sb,
			Judged: judged, Rule: shareRule, Note: note}
		d.Differs = judged && math.Abs(sb-sa) >= shareGap
		out = append(out, d)
	}
	return out
}

// countRow compares a count per unit of work.
func countRow(group, id, name string, na, nb float64, wa, wb work, minEvents int64, rule string) []Difference {
	if na == 0 && nb == 0 {
		return nil
	}
	d := Difference{Group: group, ID: id, Name: name + " per " + wa.unit, Unit: UnitCount, Per: wa.unit,
		A: na / wa.units, B: nb / wb.units, Rule: rule}
	d.Judged = math.Max(na, nb) >= float64(minEvents)
	if !d.Judged {
		d.Note = fmt.Sprintf("not judged: %s (A) and %s (B) in all, under %s", units.FormatCount(int64(na)), units.FormatCount(int64(nb)), units.FormatCount(minEvents))
	}
	d.Differs = d.Judged && ratio(d.A, d.B) >= countRatio
	return []Difference{d}
}

// latencyRow compares a mean latency over na and nb samples, of calls (or
// requests) made perA and perB times per unit of work. A latency that is
// latencyRatio apart still does not differ when, even if every call waited
// for it in line, it would move the time per unit of work by less than
// materialChange: a few microseconds more queueing of requests that take a
// fraction of the time.
func latencyRow(group, id, name string, meanA, meanB float64, na, nb int64, perA, perB float64, wa, wb work) Difference {
	d := Difference{Group: group, ID: id, Name: name, Unit: UnitSeconds, A: meanA, B: meanB, Rule: latencyRule}
	d.Judged = na >= latencyMinSamples && nb >= latencyMinSamples
	if !d.Judged {
		d.Note = fmt.Sprintf("not judged: means of %s (A) and %s (B) samples, under %s", units.FormatCount(na), units.FormatCount(nb), units.FormatCount(latencyMinSamples))
		return d
	}
	perUnit := math.Max(wa.sec/wa.units, wb.sec/wb.units)
	impact := math.Abs(meanB-meanA) * math.Max(perA, perB) / perUnit
	d.Differs = ratio(meanA, meanB) >= latencyRatio && impact >= materialChange
	if ratio(meanA, meanB) >= latencyRatio && !d.Differs {
		d.Note = fmt.Sprintf("apart, but at most %.0f%% of the time per %s even if every one waited in line (under %.0f%%)", impact*100, wa.unit, materialChange*100)
	}
	return d
}

func syncRows(a, b *model.Run, wa, wb work) []Difference {
	if !syncsTimed(a) || !syncsTimed(b) {
		return nil
	}
	ta, tb := a.TimeAccounting, b.TimeAccounting
	var kinds []string
	for _, s := range append(slices.Clone(ta.Syncs), tb.Syncs...) {
		if !slices.Contains(kinds, s.Kind) {
			kinds = append(kinds, s.Kind)
		}
	}
	var out []Difference
	for _, k := range kinds {
		sa, sb := syncOf(ta, k), syncOf(tb, k)
		name := k + " calls"
		if k == "write" {
			name = "O_SYNC/O_DSYNC writes"
		}
		out = append(out, countRow(GroupSyncs, "sync."+k+".calls", name, float64(sa.Count), float64(sb.Count), wa, wb, countMinEvents, countRule)...)
		if sa.Count > 0 && sb.Count > 0 {
			out = append(out, latencyRow(GroupSyncs, "sync."+k+".latency", k+" latency (mean)",
				sa.TotalSec/float64(sa.Count), sb.TotalSec/float64(sb.Count), sa.Count, sb.Count,
				float64(sa.Count)/wa.units, float64(sb.Count)/wb.units, wa, wb))
		}
	}
	return out
}

func cacheRows(a, b *model.Run, wa, wb work) []Difference {
	ca, cb := pageCache(a), pageCache(b)
	if ca == nil || cb == nil {
		return nil
	}
	var out []Difference
	if ca.HitRatio >= 0 && cb.HitRatio >= 0 {
		d := Difference{Group: GroupCache, ID: "cache.hit_ratio", Name: "read hit ratio", Unit: UnitRatio, A: ca.HitRatio, B: cb.HitRatio, Rule: hitRule}
		d.Judged = ca.Lookups >= cacheMinLookups && cb.Lookups >= cacheMinLookups
		if !d.Judged {
			d.Note = fmt.Sprintf("not judged: %s (A) and %s (B) pages looked up, under %s", units.FormatCount(ca.Lookups), units.FormatCount(cb.Lookups), units.FormatCount(cacheMinLookups))
		}
		d.Differs = d.Judged && math.Abs(cb.HitRatio-ca.HitRatio) >= hitRatioGap
		out = append(out, d)
	}
	// Pages counted in one run only (the other observed without
	// --storage) are not compared: not counted is not zero.
	if ca.PagesNotCounted || cb.PagesNotCounted {
		return out
	}
	out = append(out, countRow(GroupCache, "cache.read_added", "pages read in", float64(ca.ReadAdded), float64(cb.ReadAdded), wa, wb, countMinEvents, countRule)...)
	return append(out, countRow(GroupCache, "cache.dirtied", "pages dirtied", float64(ca.Dirtied), float64(cb.Dirtied), wa, wb, countMinEvents, countRule)...)
}

func concurrencyRows(a, b *model.Run) []Difference {
	var out []Difference
	ta, tb := a.TimeAccounting, b.TimeAccounting
	if ta != nil && tb != nil && ta.Source == tb.Source {
		na, nb := float64(busyThreads(ta)), float64(busyThreads(tb))
		out = append(out, Difference{Group: GroupConcurrency, ID: "concurrency.busy_threads", Name: "busy threads", Unit: UnitThreads,
			A: na, B: nb, Judged: true, Differs: ratio(na, nb) >= countRatio, Rule: threadRule})
		oa, ob := atOnce(ta), atOnce(tb)
		out = append(out, Difference{Group: GroupConcurrency, ID: "concurrency.at_once", Name: "busy threads at once (mean)", Unit: UnitThreads,
			A: oa, B: ob, Judged: true, Differs: math.Abs(ob-oa) >= concurrencyGap, Rule: atOnceRule})
		if ta.Source == "ebpf" {
			pa, pb := float64(ta.PeakThreads), float64(tb.PeakThreads)
			out = append(out, Difference{Group: GroupConcurrency, ID: "concurrency.peak_threads", Name: "threads alive at once (peak)", Unit: UnitThreads,
				A: pa, B: pb, Judged: true, Differs: ratio(pa, pb) >= countRatio, Rule: threadRule})
		}
	}
	if wa, wb := writersAtOnce(a), writersAtOnce(b); wa > 0 && wb > 0 {
		out = append(out, Difference{Group: GroupConcurrency, ID: "concurrency.writers_at_once", Name: "writers at once per file (mean)", Unit: UnitThreads,
			A: wa, B: wb, Judged: true, Differs: math.Abs(wb-wa) >= concurrencyGap, Rule: atOnceRule,
			Note: "measured (--storage): the threads in write calls on a file at once while it was in use, averaged over the files by their write time; writers at once on one file queue on its inode lock"})
	}
	if wa, wb := measuredWriters(a), measuredWriters(b); wa > 0 && wb > 0 {
		out = append(out, Difference{Group: GroupConcurrency, ID: "concurrency.writers_per_file", Name: "writer threads per file (most)", Unit: UnitThreads,
			A: wa, B: wb, Judged: true, Differs: ratio(wa, wb) >= countRatio, Rule: threadRule,
			Note: "measured (--storage): the most threads that wrote any one file; many writers on one file queue on its inode lock"})
	} else if wa, wb := writersPerFile(a), writersPerFile(b); wa > 0 && wb > 0 {
		out = append(out, Difference{Group: GroupConcurrency, ID: "concurrency.writers_per_file", Name: "writer threads per file", Unit: UnitThreads,
			A: wa, B: wb, Judged: true, Differs: ratio(wa, wb) >= countRatio, Rule: threadRule,
			Note: "from the fileio settings (observe both with --storage to measure it): sequential threads write their own files in turn, random ones any file"})
	}
	return out
}

// measuredWriters is the most threads that wrote any one file, as the
// storage probe counted them (--storage); 0 without the files or their
// thread counts (records made before they were counted).
func measuredWriters(r *model.Run) float64 {
	if r.Storage == nil {
		return 0
	}
	var most int64
	for _, f := range r.Storage.Files {
		if !f.Folded { // a directory's files together: its writers wrote several files
			most = max(most, f.Writes.Threads)
		}
	}
	return float64(most)
}

// writersAtOnce is how many threads wrote a file at once while it was in
// use, averaged over the files weighed by their time in write calls (so
// the files that took the time speak): sysbench's sequential writers, 16
// threads on one file at a time, read ~16; its random ones, spread over 16
// files, ~1 to 2. 0 without the files' spans (records made before, or
// without --storage).
func writersAtOnce(r *model.Run) float64 {
	if r.Storage == nil {
		return 0
	}
	var sum, weight float64
	for _, f := range r.Storage.Files {
		if !f.Folded && f.Writes.Concurrency > 0 {
			sum += f.Writes.Concurrency * f.Writes.CallSec
			weight += f.Writes.CallSec
		}
	}
	if weight == 0 {
		return 0
	}
	return sum / weight
}

// writersPerFile is how many fileio threads may write one file at once; 0
// when the run does not write or is not fileio.
func writersPerFile(r *model.Run) float64 {
	c := r.Target.FileIO
	if c == nil || c.RW == "read" || c.RW == "randread" || c.Files < 1 {
		return 0
	}
	if strings.HasPrefix(c.RW, "rand") {
		return float64(c.Threads)
	}
	return math.Ceil(float64(c.Threads) / float64(c.Files))
}

func switchRows(a, b *model.Run, wa, wb work) []Difference {
	oa, ob := a.Observation, b.Observation
	if oa == nil || ob == nil {
		return nil
	}
	pa, pb := oa.Totals.Process, ob.Totals.Process
	out := countRow(GroupSwitches, "ctxsw.voluntary", "voluntary switches", float64(pa.VolCtxSw), float64(pb.VolCtxSw), wa, wb, countMinEvents, countRule)
	return append(out, countRow(GroupSwitches, "ctxsw.involuntary", "involuntary switches", float64(pa.InvolCtxSw), float64(pb.InvolCtxSw), wa, wb, preemptMinEvents, preemptRule)...)
}

// blockOps are the request kinds compared, in order.
var blockOps = []string{"read", "write", "flush", "discard"}

func blockRows(a, b *model.Run, wa, wb work) []Difference {
	da, db := device(a), device(b)
	if da == nil || db == nil {
		return nil
	}
	devNote := ""
	if da.Name != db.Name {
		devNote = fmt.Sprintf("A's device %s, B's %s", da.Name, db.Name)
	}
	var out []Difference
	for _, op := range blockOps {
		oa, okA := blockOp(da, op)
		ob, okB := blockOp(db, op)
		if (!okA || oa.Requests == 0) && (!okB || ob.Requests == 0) {
			continue
		}
		// The workload's own requests (and writeback of its files), unless
		// none of either side's were: flushes are issued by the file
		// system's journal thread, and then all of the device's count.
		ra, rb := oa.WorkloadRequests+oa.WritebackRequests, ob.WorkloadRequests+ob.WritebackRequests
		ba, bb := oa.WorkloadBytes+oa.WritebackBytes, ob.WorkloadBytes+ob.WritebackBytes
		note := devNote
		switch {
		case op == "flush":
			ra, rb, ba, bb = oa.Requests, ob.Requests, oa.Bytes, ob.Bytes
			note = join(note, "all of the device's flushes: the file system's journal thread issues most of them for the workload's syncs")
		case ra == 0 && rb == 0:
			// Other tasks' requests on a shared device say nothing of the workload.
			continue
		}
		for _, d := range countRow(GroupBlock, "block."+op+".requests", op+" requests", float64(ra), float64(rb), wa, wb, countMinEvents, countRule) {
			d.Note = join(d.Note, note)
			out = append(out, d)
		}
		if op != "flush" && ra > 0 && rb > 0 {
			s := Difference{Group: GroupBlock, ID: "block." + op + ".size", Name: op + " request size (mean)", Unit: UnitBytes,
				A: float64(ba) / float64(ra), B: float64(bb) / float64(rb), Rule: sizeRule, Note: devNote}
			s.Judged = ra >= countMinEvents && rb >= countMinEvents
			if !s.Judged {
				s.Note = join(fmt.Sprintf("not judged: %d (A) and %d (B) requests, under %d", ra, rb, countMinEvents), devNote)
			}
			s.Differs = s.Judged && ratio(s.A, s.B) >= sizeRatio
			out = append(out, s)
		}
		if oa.Requests > 0 && ob.Requests > 0 {
			// The means are over all of the device's requests.
			perA, perB := float64(ra)/wa.units, float64(rb)/wb.units
			sv := latencyRow(GroupBlock, "block."+op+".service", op+" service time (mean)", oa.ServiceMeanSec, ob.ServiceMeanSec, oa.Requests, ob.Requests, perA, perB, wa, wb)
			sv.Note = join(sv.Note, "all of the device's requests")
			out = append(out, sv)
			if oa.QueueMeanSec > 0 || ob.QueueMeanSec > 0 {
				q := latencyRow(GroupBlock, "block."+op+".queue", op+" queue time (mean)", oa.QueueMeanSec, ob.QueueMeanSec, oa.Requests, ob.Requests, perA, perB, wa, wb)
				q.Note = join(q.Note, "all of the device's requests")
				out = append(out, q)
			}
		}
	}
	return out
}

func join(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// secWords formats seconds for a sentence.
func secWords(s float64) string { return units.FormatNs(s * 1e9) }
