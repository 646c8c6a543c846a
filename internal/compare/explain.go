package compare

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// Explanation is the most likely cause of the headline's difference.
type Explanation struct {
	Summary string `json:"summary"`
	// TimeDiffSec is how much longer B took for its work than A took for
	// the same amount (A's time scaled to B's units of work); negative when
	// B took less. The causes are measured against it.
	TimeDiffSec float64 `json:"time_diff_sec"`
	// Basis says what the causes are measured on.
	Basis string `json:"basis,omitempty"`
	// Causes are the candidates that account for minCauseShare or more of
	// the difference, most first.
	Causes []Cause  `json:"causes"`
	Notes  []string `json:"notes,omitempty"`
}

// Cause is one candidate cause and the evidence for it.
type Cause struct {
	// ID is "sync" (the sync calls: their count and latency) or a time
	// accounting category ("cpu" then means CPU time outside sync calls).
	ID   string `json:"id"`
	Name string `json:"name"`
	// ASec and BSec are the candidate's wall time in each run for B's
	// amount of work (its share of the busy threads' time times the
	// measured phase).
	ASec float64 `json:"a_sec"`
	BSec float64 `json:"b_sec"`
	// AccountsFor is (BSec - ASec) / TimeDiffSec: the part of the
	// difference this candidate can explain. The candidates overlap a
	// little (a thread can wait for a CPU inside a sync call), so they may
	// add up to a little over 1.
	AccountsFor float64  `json:"accounts_for"`
	Summary     string   `json:"summary"`
	Evidence    []string `json:"evidence"`
}

// causeNames name the candidates.
var causeNames = map[string]string{
	"sync":                "sync calls",
	model.CatCPU:          "CPU time",
	model.CatCPUWait:      "waiting for a CPU",
	model.CatStorageRead:  "reads from storage",
	model.CatStorageWrite: "writes to storage",
	model.CatLock:         "lock waits",
	model.CatSleep:        "sleeping (timers, pipes, children)",
	model.CatOther:        "other waits",
	model.CatUnknown:      "time the /proc observer cannot attribute",
}

// candidates are the categories compared besides the sync calls, which
// take storage-sync's place (and CPU time inside the calls).
var candidates = []string{model.CatCPU, model.CatCPUWait, model.CatStorageRead, model.CatStorageWrite, model.CatLock, model.CatSleep, model.CatOther, model.CatUnknown}

func explain(a, b *model.Run, c *Comparison) Explanation {
	h := c.Headline
	var e Explanation
	switch {
	case h.Significance == NotComparableMeasure:
		e.Summary = "no headline change to explain: " + h.Reason
		return e
	case h.Significance == NotSignificant:
		e.Summary = "no significant difference: nothing to explain (" + h.Reason + ")"
		return e
	case h.Significance == Unknown && math.Abs(h.Change) < materialChange:
		e.Summary = fmt.Sprintf("B %s, less than the %.0f%% a single run can move by itself: nothing to explain until repeats show the change is real", h.Words, materialChange*100)
		return e
	}
	wa, okA := workOf(a)
	wb, okB := workOf(b)
	ta, tb := a.TimeAccounting, b.TimeAccounting
	if !okA || !okB || ta == nil || tb == nil || busySeconds(ta) == 0 || busySeconds(tb) == 0 {
		var missing []string
		if ta == nil || busySeconds(ta) == 0 {
			missing = append(missing, "A")
		}
		if tb == nil || busySeconds(tb) == 0 {
			missing = append(missing, "B")
		}
		e.Summary = fmt.Sprintf("B %s, but %s has no time accounting to say why: run both with perfsleuth observe (as root, for eBPF)", h.Words, strings.Join(missing, " and "))
		return e
	}
	scale := wb.units / wa.units
	secA, secB := wa.sec*scale, wb.sec
	e.TimeDiffSec = secB - secA
	e.Basis = fmt.Sprintf("B took %s for its work, A %s for the same amount", secWords(secB), secWords(secA))
	if wa.unit != "run" {
		e.Basis = fmt.Sprintf("B took %s for %s %ss, A %s for as many", secWords(secB), units.FormatCount(int64(wb.units)), wb.unit, secWords(secA))
	}
	timed, cp := syncsTimed(a) && syncsTimed(b), onCriticalPath(a) && onCriticalPath(b)
	sa, sb := shares(a, timed, cp), shares(b, timed, cp)
	// When the runs took about as long while the measure moved (a run of
	// fixed duration, a --metric), there is no time difference to share
	// out: the candidates are ranked by how far their share moved.
	byShare := math.Abs(e.TimeDiffSec) < materialChange*math.Max(secA, secB)
	if byShare {
		e.Basis = "the runs took about as long for the same work, so the causes are ranked by how far their share of the busy threads' time moved"
		if cp {
			e.Basis = "the runs took about as long for the same work, so the causes are ranked by how far their share of the critical path moved"
		}
	}
	var causes []Cause
	for _, id := range append([]string{"sync"}, candidates...) {
		x := Cause{ID: id, Name: causeNames[id], ASec: sa[id] * secA, BSec: sb[id] * secB}
		if id == "sync" && !timed {
			x.Name = "time blocked in sync calls (storage-sync)"
		}
		if byShare {
			x.AccountsFor = -sign(h.Change) * (sb[id] - sa[id])
		} else {
			x.AccountsFor = (x.BSec - x.ASec) / e.TimeDiffSec
		}
		if x.AccountsFor >= minCauseShare {
			causes = append(causes, x)
		}
	}
	sort.SliceStable(causes, func(i, j int) bool { return causes[i].AccountsFor > causes[j].AccountsFor })
	if len(causes) > maxCauses {
		causes = causes[:maxCauses]
	}
	for i := range causes {
		describeCause(&causes[i], a, b, c, wa, wb, e.TimeDiffSec, byShare)
	}
	e.Causes = causes
	hedge := ""
	if h.Significance == Unknown {
		hedge = "if the difference is real (the noise is unknown): "
	}
	if len(causes) == 0 {
		e.Summary = fmt.Sprintf("%sno single part of the time accounts for a tenth of the difference: B %s with its time spread as A's; compare the measured differences above", hedge, h.Words)
		return e
	}
	e.Summary = hedge + "the most likely cause is " + causes[0].Summary
	if related := relatedIssue(causes[0].ID, c.Issues); related != nil {
		e.Summary += fmt.Sprintf("; this follows from the %s named first (A %s, B %s)", related.Aspect, related.A, related.B)
	}
	if len(causes) > 1 {
		e.Notes = append(e.Notes, "the candidates overlap a little (a thread can wait for a CPU inside a sync call), so their shares may add up to a little over 100%")
	}
	return e
}

func sign(x float64) float64 {
	if x < 0 {
		return -1
	}
	return 1
}

// onCriticalPath says whether a run has a critical path (a wait-for
// graph) to rank causes by.
func onCriticalPath(r *model.Run) bool {
	ta := r.TimeAccounting
	if ta == nil || len(ta.CriticalPath) == 0 {
		return false
	}
	for _, s := range ta.CriticalPath {
		if s > 0 {
			return true
		}
	}
	return false
}

// shares are each candidate's share of a run's critical path (cp, when
// both runs have one: threads that wait for the one doing the work do not
// outvote it; rsync's sleeping sender ranked first, "65% of the
// difference"), else of its busy-thread time. With sync calls timed (in
// both runs, so that both are counted alike), "sync" is their time blocked
// and on a CPU or waiting for one inside them (syncCPU), and "cpu" and
// "cpu-wait" the time outside them; otherwise "sync" is the storage-sync
// category.
func shares(r *model.Run, timed, cp bool) map[string]float64 {
	ta := r.TimeAccounting
	tot := ta.Total
	if cp {
		tot = ta.CriticalPath
	}
	busy := 0.0
	for _, k := range slices.Sorted(maps.Keys(tot)) {
		busy += tot[k]
	}
	out := map[string]float64{}
	if busy <= 0 {
		return out
	}
	for _, c := range candidates {
		out[c] = tot[c] / busy
	}
	out["sync"] = tot[model.CatStorageSync] / busy
	if timed {
		// The sync calls' time on a CPU or in the run queue, which the
		// accounting counts as cpu and cpu-wait, moves to "sync".
		cpu, wait := syncCPU(ta, cp)
		cpu, wait = math.Min(cpu, tot[model.CatCPU]), math.Min(wait, tot[model.CatCPUWait])
		out["sync"] = math.Min(1, (tot[model.CatStorageSync]+cpu+wait)/busy)
		out[model.CatCPU] = (tot[model.CatCPU] - cpu) / busy
		out[model.CatCPUWait] = (tot[model.CatCPUWait] - wait) / busy
	}
	return out
}

// syncCPU is a run's time on a CPU and waiting for one inside sync calls:
// the time by activity and state's sync row (its critical-path column on
// the critical path), which has it from the on-CPU samples or, on ext4,
// from the sync calls' own split; else that split (the busy threads'); and
// in records made before either, the calls' time less the blocked time,
// all of it counted as cpu.
func syncCPU(ta *model.TimeAccounting, cp bool) (cpu, wait float64) {
	if ta.Matrix != nil {
		for _, m := range ta.Matrix {
			if m.Activity != "sync" {
				continue
			}
			sec := m.Seconds
			if cp {
				sec = m.CriticalSec
			}
			switch m.State {
			case model.StateCPU:
				cpu += sec
			case model.StateCPUWait:
				wait += sec
			}
		}
		return cpu, wait
	}
	split := false
	for _, s := range ta.Syncs {
		if s.SplitSec > 0 {
			split = true
			cpu += s.Split[model.CatCPU]
			wait += s.Split[model.CatCPUWait]
		}
	}
	if split {
		return cpu, wait
	}
	_, sec := syncTotals(ta)
	return math.Max(0, math.Min(sec, busySeconds(ta))-ta.Total[model.CatStorageSync]), 0
}

// relatedIssue is the not-comparable issue that a cause follows from.
func relatedIssue(cause string, issues []Issue) *Issue {
	ids := map[string][]string{
		"sync":                {"settings.sync", "sync.behaviour"},
		model.CatStorageRead:  {"cache.cold", "settings.direct", "settings.size"},
		model.CatStorageWrite: {"settings.direct", "settings.bs"},
		model.CatCPUWait:      {"settings.threads"},
		model.CatLock:         {"settings.threads", "settings.files"},
	}[cause]
	for i := range issues {
		for _, id := range ids {
			if issues[i].ID == id && issues[i].Severity == NotComparable {
				return &issues[i]
			}
		}
	}
	return nil
}

// describeCause writes a cause's summary and evidence.
func describeCause(x *Cause, a, b *model.Run, c *Comparison, wa, wb work, diff float64, byShare bool) {
	how := fmt.Sprintf("%s in B against %s in A for the same work: %s of the %s difference (%.0f%%)",
		secWords(x.BSec), secWords(x.ASec), secWords(math.Abs(x.BSec-x.ASec)), secWords(math.Abs(diff)), x.AccountsFor*100)
	if byShare {
		timed, cp := syncsTimed(a) && syncsTimed(b), onCriticalPath(a) && onCriticalPath(b)
		sa, sb := shares(a, timed, cp)[x.ID], shares(b, timed, cp)[x.ID]
		how = fmt.Sprintf("%.0f%% of B's busy time against %.0f%% of A's", sb*100, sa*100)
		if cp {
			how = fmt.Sprintf("%.0f%% of B's critical path against %.0f%% of A's", sb*100, sa*100)
		}
	}
	x.Summary = x.Name + ": " + how
	row := func(id string) {
		if d := c.find(id); d != nil {
			x.Evidence = append(x.Evidence, d.Words())
		}
	}
	switch x.ID {
	case "sync":
		if s := syncWords(a, b, wa, wb); s != "" {
			x.Summary = "sync calls: " + s + "; " + how
		}
		for _, k := range syncKinds(a, b) {
			sa, sb := syncOf(a.TimeAccounting, k), syncOf(b.TimeAccounting, k)
			x.Evidence = append(x.Evidence, fmt.Sprintf("%s: A %s calls (%s per %s), mean %s; B %s (%s per %s), mean %s",
				k, units.FormatCount(sa.Count), perUnit(float64(sa.Count), wa), wa.unit, meanWords(sa),
				units.FormatCount(sb.Count), perUnit(float64(sb.Count), wb), wb.unit, meanWords(sb)))
		}
		row("accounting." + model.CatStorageSync)
		row("block.flush.requests")
		row("block.flush.service")
	case model.CatCPU:
		x.Evidence = append(x.Evidence, cpuSplit(a, "A"), cpuSplit(b, "B"))
		if syncsTimed(a) && syncsTimed(b) {
			x.Evidence = append(x.Evidence, "CPU time inside sync calls is counted under sync calls, not here")
		}
		issueEvidence(x, c.Issues, "host.cpus", "host.cpus_online", "host.kernel")
	case model.CatCPUWait:
		if syncsTimed(a) && syncsTimed(b) {
			x.Evidence = append(x.Evidence, "time waiting for a CPU inside sync calls is counted under sync calls, not here")
		}
		row("accounting." + model.CatCPUWait)
		row("ctxsw.involuntary")
		row("concurrency.at_once")
		issueEvidence(x, c.Issues, "host.cpus_online", "settings.threads", "observer.options")
	case model.CatStorageRead:
		row("accounting." + model.CatStorageRead)
		row("cache.hit_ratio")
		row("cache.read_added")
		row("block.read.requests")
		row("block.read.service")
		issueEvidence(x, c.Issues, "cache.cold", "cache.prepared", "host.memory", "storage.device")
	case model.CatStorageWrite:
		row("accounting." + model.CatStorageWrite)
		row("cache.dirtied")
		row("block.write.requests")
		row("block.write.size")
		row("block.write.service")
		issueEvidence(x, c.Issues, "storage.device", "storage.mount_options", "storage.scheduler")
	case model.CatLock:
		row("accounting." + model.CatLock)
		row("concurrency.busy_threads")
		row("concurrency.writers_per_file")
		row("ctxsw.voluntary")
		issueEvidence(x, c.Issues, "settings.threads", "settings.files")
	default:
		row("accounting." + x.ID)
	}
}

// syncWords says how the sync calls changed: their count per unit of work
// and their mean latency, and which of the two moved the time more (the
// sync time per unit is count x latency, so the logs of the two factors
// add up to the log of its change).
func syncWords(a, b *model.Run, wa, wb work) string {
	if !syncsTimed(a) || !syncsTimed(b) {
		return ""
	}
	na, secA := syncTotals(a.TimeAccounting)
	nb, secB := syncTotals(b.TimeAccounting)
	kind := "sync"
	if ks := syncKinds(a, b); len(ks) == 1 {
		kind = ks[0]
	}
	s := fmt.Sprintf("B made %s %s calls per %s against A's %s", perUnit(float64(nb), wb), kind, wb.unit, perUnit(float64(na), wa))
	if na == 0 || nb == 0 {
		return s
	}
	la, lb := secA/float64(na), secB/float64(nb)
	s += fmt.Sprintf(", of %s against %s on average", secWords(lb), secWords(la))
	cf := math.Abs(math.Log((float64(nb) / wb.units) / (float64(na) / wa.units)))
	lf := math.Abs(math.Log(lb / la))
	switch {
	case cf > lf:
		s += " (the count moved more than the latency)"
	case lf > cf:
		s += " (the latency moved more than the count)"
	}
	return s
}

// syncKinds are the kinds of sync call either run made, in order.
func syncKinds(a, b *model.Run) []string {
	var out []string
	for _, r := range []*model.Run{a, b} {
		for _, s := range r.TimeAccounting.Syncs {
			if s.Count > 0 && !slices.Contains(out, s.Kind) {
				out = append(out, s.Kind)
			}
		}
	}
	return out
}

func meanWords(s model.SyncCalls) string {
	if s.Count == 0 {
		return "-"
	}
	return secWords(s.TotalSec / float64(s.Count))
}

func cpuSplit(r *model.Run, name string) string {
	ta := r.TimeAccounting
	u := 0.0
	if t := ta.UserSec + ta.SystemSec; t > 0 {
		u = ta.UserSec / t
	}
	return fmt.Sprintf("%s: CPU %s, %.0f%% of the busy time, user %.0f%% system %.0f%%", name, secWords(ta.Total[model.CatCPU]), share(ta, model.CatCPU)*100, u*100, (1-u)*100)
}

// issueEvidence adds the issues with these ids as evidence.
func issueEvidence(x *Cause, issues []Issue, ids ...string) {
	for _, id := range ids {
		for _, is := range issues {
			if is.ID == id {
				x.Evidence = append(x.Evidence, fmt.Sprintf("%s: A %s, B %s", is.Aspect, is.A, is.B))
			}
		}
	}
}

// find is the difference row with this id.
func (c *Comparison) find(id string) *Difference {
	for i := range c.Differences {
		if c.Differences[i].ID == id {
			return &c.Differences[i]
		}
	}
	return nil
}

// Words says a row in a sentence: "storage-sync share of the busy time: A
// 15%, B 41% (differs)".
func (d Difference) Words() string {
	name := d.Name
	if d.Unit == UnitShare {
		name += " share of the busy time"
	}
	s := fmt.Sprintf("%s: A %s, B %s", name, d.Format(d.A), d.Format(d.B))
	switch {
	case d.Differs:
		s += " (differs)"
	case !d.Judged:
		s += " (not judged)"
	}
	return s
}

// Format formats one of the row's values in its unit.
func (d Difference) Format(v float64) string {
	switch d.Unit {
	case UnitShare:
		return fmt.Sprintf("%.0f%%", v*100)
	case UnitRatio:
		return fmt.Sprintf("%.2f", v)
	case UnitSeconds:
		return secWords(v)
	case UnitBytes:
		return size(int64(v + 0.5))
	case UnitThreads:
		if v == math.Trunc(v) {
			return fmt.Sprintf("%.0f", v)
		}
		return fmt.Sprintf("%.2f", v)
	}
	return sig(v)
}
