package compare

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// issues lists what differs between the runs' settings and conditions: the
// ones that make them not comparable first, each group in the order of the
// rules below (sync behaviour before the rest: it moves a storage-bound
// result most).
func issues(a, b *model.Run) []Issue {
	var out []Issue
	for _, rule := range issueRules {
		out = append(out, rule(a, b)...)
	}
	slices.SortStableFunc(out, func(x, y Issue) int {
		return severityRank(x.Severity) - severityRank(y.Severity)
	})
	return out
}

func severityRank(s string) int {
	if s == NotComparable {
		return 0
	}
	return 1
}

// issueRules in the order their issues are listed at equal severity.
var issueRules = []func(a, b *model.Run) []Issue{
	kindIssue,
	interruptedIssue,
	syncIssue,
	coldCacheIssue,
	settingsIssues,
	measureIssue,
	preparedIssue,
	hostIssues,
	storageIssues,
	observerIssues,
	experimentIssues,
}

func kindIssue(a, b *model.Run) []Issue {
	if a.Target.Kind == b.Target.Kind {
		return nil
	}
	return []Issue{{ID: "workload.kind", Severity: NotComparable, Aspect: "workload",
		A: a.Target.Kind, B: b.Target.Kind,
		Why: "different workloads do different work: only what they share (host, time accounting, storage) is set side by side, and the headline measures differ"}}
}

func interruptedIssue(a, b *model.Run) []Issue {
	if !a.Interrupted && !b.Interrupted {
		return nil
	}
	word := func(r *model.Run) string {
		if r.Interrupted {
			return "interrupted"
		}
		return "complete"
	}
	return []Issue{{ID: "run.interrupted", Severity: NotComparable, Aspect: "run stopped early",
		A: word(a), B: word(b),
		Why: "an interrupted run's result covers only the work done until it stopped: run it again to the end"}}
}

// syncIssue names a difference in sync behaviour: the sync settings of a
// built-in benchmark, or, for a command (or the same settings), sync calls
// per unit of work countRatio apart.
func syncIssue(a, b *model.Run) []Issue {
	if a.Target.Kind != b.Target.Kind {
		return nil
	}
	wa, wb, haveWork := pairWork(a, b)
	na, nb, timed := syncCounts(a, b)
	var sa, sb string
	switch {
	case a.Target.SQLite != nil && b.Target.SQLite != nil:
		sa, sb = sqliteSync(a.Target.SQLite), sqliteSync(b.Target.SQLite)
	case a.Target.FileIO != nil && b.Target.FileIO != nil:
		sa, sb = fileioSync(a.Target.FileIO), fileioSync(b.Target.FileIO)
	}
	if sa != sb {
		why := "the sync settings decide how often the workload waits for the device to make its writes durable, which can change its speed many times over: the comparison measures these settings as much as anything else"
		if timed && haveWork {
			why += fmt.Sprintf("; here A made %s sync calls per %s and B %s", perUnit(float64(na), wa), wa.unit, perUnit(float64(nb), wb))
		}
		return []Issue{{ID: "settings.sync", Severity: NotComparable, Aspect: "sync behaviour", A: sa, B: sb, Why: why}}
	}
	if !timed || !haveWork || max(na, nb) < countMinEvents || ratio(float64(na)/wa.units, float64(nb)/wb.units) < countRatio {
		return nil
	}
	return []Issue{{ID: "sync.behaviour", Severity: NotComparable, Aspect: "sync behaviour (observed)",
		A:   fmt.Sprintf("%s sync calls per %s", perUnit(float64(na), wa), wa.unit),
		B:   fmt.Sprintf("%s sync calls per %s", perUnit(float64(nb), wb), wb.unit),
		Why: fmt.Sprintf("the runs synced %s as often as each other or more for the same work (another fsync policy, group commit, a library's default): the comparison measures that as much as anything else", times(countRatio))}}
}

// syncCounts are the runs' sync call counts, when both were timed.
func syncCounts(a, b *model.Run) (na, nb int64, ok bool) {
	if !syncsTimed(a) || !syncsTimed(b) {
		return 0, 0, false
	}
	na, _ = syncTotals(a.TimeAccounting)
	nb, _ = syncTotals(b.TimeAccounting)
	return na, nb, true
}

// perUnit formats count per unit of work with 2 significant digits (3 from 100).
func perUnit(count float64, w work) string {
	if w.units <= 0 {
		return "?"
	}
	return sig(count / w.units)
}

func sig(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 100:
		return units.FormatCount(int64(v + 0.5))
	case v >= 10:
		return fmt.Sprintf("%.0f", v)
	}
	d := max(0, 1-int(math.Floor(math.Log10(v))))
	s := fmt.Sprintf("%.*f", d, v)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

func sqliteSync(c *model.SQLiteConfig) string {
	return fmt.Sprintf("journal=%s sync=%s", c.Journal, c.Sync)
}

func fileioSync(c *model.FileIOConfig) string {
	var parts []string
	call := "fsync"
	if c.Fdatasync {
		call = "fdatasync"
	}
	if c.Fsync > 0 {
		parts = append(parts, fmt.Sprintf("%s every %d write(s)", call, c.Fsync))
	}
	if c.EndFsync {
		parts = append(parts, call+" at the end")
	}
	if c.Sync {
		parts = append(parts, "O_SYNC")
	}
	if c.Dsync {
		parts = append(parts, "O_DSYNC")
	}
	if len(parts) == 0 {
		return "no syncs"
	}
	return strings.Join(parts, ", ")
}

// coldCacheIssue: one run's buffered reads mostly hit the page cache and the
// other's did not.
func coldCacheIssue(a, b *model.Run) []Issue {
	ha, wa, okA := readHits(a)
	hb, wb, okB := readHits(b)
	if !okA || !okB {
		return nil
	}
	coldA, coldB := ha < cacheHitRatioMin, hb < cacheHitRatioMin
	if coldA == coldB {
		return nil
	}
	cold := "A"
	if coldB {
		cold = "B"
	}
	return []Issue{{ID: "cache.cold", Severity: NotComparable, Aspect: "cold cache in " + cold,
		A: wa, B: wb,
		Why: fmt.Sprintf("%s read much of its data from the device while the other found it cached (hit ratio below %.1f against at or above): a warm-up run, or evicting the cache before both (diagnose's cold-cache condition), makes them alike", cold, cacheHitRatioMin)}}
}

// readHits is the share of r's buffered reads the page cache served, and
// how it was measured: the storage probe's hit ratio when it counted
// pages (--storage), else 1 - read_bytes/rchar of /proc/PID/io, which
// counts every read (pipes and sockets too) against the bytes its reads
// fetched from a device (O_DIRECT too), so it can only look warmer than
// the cache was, never colder. ok is false with too few reads to tell.
func readHits(r *model.Run) (hits float64, what string, ok bool) {
	if c := pageCache(r); c != nil && !c.PagesNotCounted {
		if c.HitRatio < 0 || c.Lookups < cacheMinLookups {
			return 0, "", false
		}
		return c.HitRatio, fmt.Sprintf("page-cache hit ratio %.2f (%s pages looked up)", c.HitRatio, units.FormatCount(c.Lookups)), true
	}
	if r.Observation == nil {
		return 0, "", false
	}
	p := r.Observation.Totals.Process
	if p.RChar < cacheMinLookups*pageBytes {
		return 0, "", false
	}
	hits = 1 - min(float64(p.ReadBytes)/float64(p.RChar), 1)
	return hits, fmt.Sprintf("about %.2f of its reads from the cache (1 - %s fetched from devices / %s read, /proc/PID/io)",
		hits, units.FormatSize(p.ReadBytes), units.FormatSize(p.RChar)), true
}

// pageBytes is the page size the /proc estimate counts reads in.
const pageBytes = 4096

func pageCache(r *model.Run) *model.PageCache {
	if r.Storage == nil {
		return nil
	}
	return r.Storage.Cache
}

// settingRule says what a difference in one workload setting does to the
// comparison. Settings not listed are "keep in mind".
type settingRule struct {
	severity string
	why      string
}

// ignoredSettings say where or how a run kept its files, not what it did;
// the file system behind the directory is compared with the host.
var ignoredSettings = map[string]bool{"dir": true, "dir_created": true, "keep": true, "force": true}

// syncSettings are covered by the sync-behaviour issue.
var syncSettings = map[string]map[string]bool{
	"sqlite": {"journal": true, "sync": true},
	"fileio": {"fsync": true, "fdatasync": true, "end_fsync": true, "sync": true, "dsync": true},
}

var workDiffers = "the runs did different work, and the result moves with it"

var settingRules = map[string]map[string]settingRule{
	"sqlite": {
		"rows":       {NotComparable, "a larger table makes every statement walk deeper b-trees and touch more pages"},
		"tx_size":    {NotComparable, "statements per transaction decide how many commits (and syncs) the same rows cost"},
		"page_size":  {NotComparable, "the page size decides how many bytes each change writes and syncs"},
		"cache_size": {NotComparable, "SQLite's own page cache decides how often pages are read again"},
		"index":      {NotComparable, "an index makes every insert and delete write a second b-tree"},
		"phases":     {NotComparable, workDiffers},
		"seed":       {KeepInMind, "another key order and row contents: the same amount of work, laid out differently"},
	},
	"fileio": {
		"rw":            {NotComparable, workDiffers},
		"rwmix_read":    {NotComparable, workDiffers},
		"bs":            {NotComparable, "the block size decides the cost of each call and each request: " + workDiffers},
		"size":          {NotComparable, "the files' size decides whether they fit the page cache and how far apart random offsets fall"},
		"files":         {NotComparable, "the number of files decides how many threads share each file's inode lock"},
		"threads":       {NotComparable, "a different thread count changes how much runs at once, and how much waits for CPUs, locks and the device"},
		"direct":        {NotComparable, "O_DIRECT bypasses the page cache: every call goes to the device"},
		"ioengine":      {NotComparable, "the engine decides how many requests a thread has in flight, and what each costs to issue"},
		"iodepth":       {NotComparable, "the queue depth decides how many requests each thread keeps at the device at once"},
		"iodepth_batch": {KeepInMind, "requests submitted per call: the same work, issued in fewer or more calls"},
		"seed":          {KeepInMind, "other random offsets: the same amount of work, laid out differently"},
	},
}

// settingsIssues lists every workload setting that differs.
func settingsIssues(a, b *model.Run) []Issue {
	kind := a.Target.Kind
	if kind != b.Target.Kind {
		return nil
	}
	var out []Issue
	switch kind {
	case "sqlite", "fileio":
		var ca, cb any = a.Target.SQLite, b.Target.SQLite
		if kind == "fileio" {
			ca, cb = a.Target.FileIO, b.Target.FileIO
		}
		sa, sb := settingValues(ca), settingValues(cb)
		for _, name := range settingNames(ca) {
			if sa[name] == sb[name] || ignoredSettings[name] || syncSettings[kind][name] {
				continue
			}
			r, ok := settingRules[kind][name]
			if !ok {
				r = settingRule{KeepInMind, "a setting that does not change the work itself"}
			}
			out = append(out, Issue{ID: "settings." + name, Severity: r.severity, Aspect: name, A: sa[name], B: sb[name], Why: r.why})
		}
	case "command":
		if ca, cb := a.Target.Command, b.Target.Command; ca != nil && cb != nil && !slices.Equal(ca.Argv, cb.Argv) {
			out = append(out, Issue{ID: "settings.argv", Severity: KeepInMind, Aspect: "command",
				A: strings.Join(ca.Argv, " "), B: strings.Join(cb.Argv, " "),
				Why: "different commands (or arguments): the comparison measures the programs' difference along with everything else"})
		}
	case "pid":
		if pa, pb := a.Target.PID, b.Target.PID; pa != nil && pb != nil && pa.Cmdline != pb.Cmdline {
			out = append(out, Issue{ID: "settings.cmdline", Severity: KeepInMind, Aspect: "process",
				A: pa.Cmdline, B: pb.Cmdline,
				Why: "different processes were observed, each for as long as it ran or was watched: what they did in the window may differ"})
		}
	}
	return out
}

// settingValues lists a settings struct's fields by JSON name, formatted.
func settingValues(v any) map[string]string {
	out := map[string]string{}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return out
	}
	rv = rv.Elem()
	for i := 0; i < rv.NumField(); i++ {
		name := strings.Split(rv.Type().Field(i).Tag.Get("json"), ",")[0]
		f := rv.Field(i)
		switch {
		case name == "bs" || name == "size":
			out[name] = size(f.Int())
		case f.Kind() == reflect.Slice:
			var items []string
			for j := 0; j < f.Len(); j++ {
				items = append(items, fmt.Sprint(f.Index(j).Interface()))
			}
			out[name] = strings.Join(items, ",")
		default:
			out[name] = model.LegacySetting(name, fmt.Sprint(f.Interface()))
		}
	}
	return out
}

// settingNames are a settings struct's JSON names in declaration order.
func settingNames(v any) []string {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		return nil
	}
	t = t.Elem()
	var out []string
	for i := 0; i < t.NumField(); i++ {
		if name := strings.Split(t.Field(i).Tag.Get("json"), ",")[0]; name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// measureIssue: two diagnose records (or a diagnose and another) whose
// measures differ in kind (a --metric against wall time).
func measureIssue(a, b *model.Run) []Issue {
	ma, mb := measureOf(a), measureOf(b)
	if a.Target.Kind != b.Target.Kind || sameMeasure(ma, mb) {
		return nil
	}
	return []Issue{{ID: "measure", Severity: NotComparable, Aspect: "headline measure",
		A: measureWords(ma), B: measureWords(mb),
		Why: "the runs measured different numbers, so there is no headline change; give both the same --metric (or none)"}}
}

func measureWords(m model.Measure) string {
	if m.Unit != "" && m.Unit != m.Name {
		return m.Name + " (" + m.Unit + ")"
	}
	return m.Name
}

// preparedIssue: a fileio run that reads through the page cache found its
// files just written by prepare (cached) in one run and kept from an earlier
// run (perhaps not cached) in the other.
func preparedIssue(a, b *model.Run) []Issue {
	pa, pb := fileioPrepare(a), fileioPrepare(b)
	if pa == nil || pb == nil || pa.Reused == pb.Reused || a.Target.FileIO.Direct || !strings.Contains(a.Target.FileIO.RW, "read") && a.Target.FileIO.RW != "randrw" {
		return nil
	}
	word := func(p *model.PrepareStats) string {
		if p.Reused {
			return "files kept from an earlier run"
		}
		return "files written just before (cached)"
	}
	return []Issue{{ID: "cache.prepared", Severity: KeepInMind, Aspect: "where the files came from",
		A: word(pa), B: word(pb),
		Why: "files prepare has just written are in the page cache; kept ones are only if nothing evicted them: the read hit ratio (observed with --storage) or the cold-cache check says which"}}
}

func fileioPrepare(r *model.Run) *model.PrepareStats {
	if r.Result == nil || r.Result.FileIO == nil || r.Target.FileIO == nil {
		return nil
	}
	return &r.Result.FileIO.Prepare
}
