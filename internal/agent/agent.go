// Package agent is `perfsleuth agent`: the time accounting of selected
// cgroups or processes, observed window after window, served on an HTTP
// listener for Prometheus (issue 23). Each window is an observe -p of the
// processes in the selected cgroups at its start (their children are
// followed as observe follows them), analysed as observe's record is; its
// seconds per category are added to counters kept across windows, by
// cgroup, process name and category, and its verdict is a labelled gauge.
// The agent's own cost (its CPU time, the eBPF programs' estimated CPU
// time, its resident memory) is served beside.
//
// Cardinality is bounded: at most MaxProcesses process names per cgroup
// get series of their own (the first seen keep theirs, so a counter never
// changes its labels); the rest are summed under process="other".
package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/procfs"

	"github.com/perfsleuth/perfsleuth/internal/analyze"
	"github.com/perfsleuth/perfsleuth/internal/export"
	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/probe"
	"github.com/perfsleuth/perfsleuth/internal/proctree"
	"github.com/perfsleuth/perfsleuth/internal/runner"
	"github.com/perfsleuth/perfsleuth/internal/target"
)

// Config is what the agent observes and where it serves.
type Config struct {
	// Listen is the address /metrics is served on (host:port).
	Listen string
	// Window is the length of one observation.
	Window time.Duration
	// Cgroups are cgroup directories (in a v1 or v2 hierarchy) whose
	// processes, and those of the cgroups below them, are observed (a
	// hierarchy's root is the whole machine); PIDs are processes
	// observed by pid.
	Cgroups []string
	PIDs    []int
	// Kubepods are directories (a kubelet's kubepods cgroup) whose
	// Kubernetes containers' cgroups are observed, each its own cgroup
	// label, found anew at each window; HostRoot is where the host's
	// root is mounted ("/" on the host), under which the container
	// runtime's state names each container, its pod and namespace.
	Kubepods []string
	HostRoot string
	// MaxCgroups bounds the containers' cgroups observed at once.
	MaxCgroups int
	// MaxProcesses bounds the process names per cgroup that get series
	// of their own.
	MaxProcesses int
	// Probe is what each window's probes are asked.
	Probe probe.Options
	// OTLP, when set, is an OpenTelemetry Collector's OTLP/HTTP address
	// (http://host:4318) the same figures are pushed to once a window.
	OTLP string
	// Serving, when set, is called with the address the listener took
	// (Listen's port chosen when it was 0), before the first window.
	Serving func(addr string)
}

// DefaultMaxProcesses is --max-processes' default.
const DefaultMaxProcesses = 20

// DefaultMaxCgroups bounds the containers found under --kubepods: a
// kubelet runs 110 pods a node by default.
const DefaultMaxCgroups = 256

// other is the process label of the names past MaxProcesses, and the
// cgroup label of a process born in a window whose cgroup is none of the
// selected ones (or that was gone at the window's end).
const other = "other"

// byPID is the cgroup label of the processes given with -p.
const byPID = "pids"

// Agent observes and serves.
type Agent struct {
	cfg Config

	mu sync.Mutex
	// seconds per (cgroup, process, category), added over windows.
	seconds map[seriesKey]float64
	names   map[string][]string // per cgroup, the process names with series
	// cache are the page-cache figures and sqlite the SQLite page
	// operations (by kind, page type and op) over the windows; cached
	// says the per-page counts were taken (--storage).
	cache  map[string]float64
	sqlite map[[3]string]float64
	cached bool
	// syncs are the sync calls' latency by kind, block the block devices'
	// service time by device and op, over the windows.
	syncs map[string]*hist
	block map[[2]string]*hist
	// kube names the Kubernetes containers' cgroups.
	kube map[string]Container
	// verdicts is each cgroup's last window's verdict.
	verdicts map[string]*model.Verdict
	windows  map[string]float64 // observed windows per cgroup
	observed map[string]float64 // observed seconds per cgroup
	missing  map[string]float64 // windows a cgroup had no process (or was gone)
	failed   float64            // windows whose observation failed
	probeCPU float64            // the eBPF programs' estimated CPU seconds
	dropped  float64            // events the probe could not record
	// profiling is held while a profile is taken (one at a time).
	profiling sync.Mutex
}

type seriesKey struct{ cgroup, process, category string }

// New checks cfg and makes an agent.
func New(cfg Config) (*Agent, error) {
	if cfg.Window < time.Second {
		return nil, fmt.Errorf("--window %s: give 1s or more (each window attaches the probes anew)", cfg.Window)
	}
	if len(cfg.Cgroups) == 0 && len(cfg.PIDs) == 0 && len(cfg.Kubepods) == 0 {
		return nil, errors.New("nothing to observe: give --cgroup DIR (a cgroup's directory, e.g. /sys/fs/cgroup/system.slice/redis.service), --kubepods DIR or -p PID")
	}
	for i, dir := range cfg.Kubepods {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, err
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("--kubepods %s: not a directory: give the kubelet's kubepods cgroup, e.g. /sys/fs/cgroup/kubepods.slice or /sys/fs/cgroup/cpu/kubepods", dir)
		}
		cfg.Kubepods[i] = abs
	}
	if cfg.HostRoot == "" {
		cfg.HostRoot = "/"
	}
	for i, dir := range cfg.Cgroups {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, err
		}
		if _, err := os.Stat(filepath.Join(abs, "cgroup.procs")); err != nil {
			return nil, fmt.Errorf("--cgroup %s: not a cgroup directory (no cgroup.procs): give a directory under /sys/fs/cgroup", dir)
		}
		cfg.Cgroups[i] = abs
	}
	for _, pid := range cfg.PIDs {
		if pid < 1 {
			return nil, fmt.Errorf("--pid %d: not a process id: give a running process's pid", pid)
		}
		if pid == os.Getpid() {
			return nil, fmt.Errorf("--pid %d: that is the agent itself, which cannot observe itself (its cost is served as perfsleuth_agent_cpu_seconds_total): give another pid", pid)
		}
		if !alive(pid) {
			return nil, fmt.Errorf("--pid %d: no such process: check the pid with ps", pid)
		}
	}
	if cfg.OTLP != "" {
		if u, err := url.Parse(cfg.OTLP); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("--otlp %s: give the collector's OTLP/HTTP address, e.g. http://otel-collector:4318", cfg.OTLP)
		}
	}
	if cfg.MaxProcesses < 1 {
		return nil, fmt.Errorf("--max-processes %d: give 1 or more", cfg.MaxProcesses)
	}
	if st, err := os.Stat(cfg.HostRoot); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("--host-root %s: not a directory: give where the host's root is mounted (/ on the host)", cfg.HostRoot)
	}
	if cfg.MaxCgroups < 1 {
		return nil, fmt.Errorf("--max-cgroups %d: give 1 or more", cfg.MaxCgroups)
	}
	return &Agent{cfg: cfg, seconds: map[seriesKey]float64{}, names: map[string][]string{}, verdicts: map[string]*model.Verdict{}, kube: map[string]Container{},
		syncs: map[string]*hist{}, block: map[[2]string]*hist{}, cache: map[string]float64{}, sqlite: map[[3]string]float64{},
		windows: map[string]float64{}, observed: map[string]float64{}, missing: map[string]float64{}}, nil
}

// Run serves /metrics and observes window after window until ctx ends.
// log (may be nil) gets a line per window that failed.
func (a *Agent) Run(ctx context.Context, log io.Writer) error {
	if log == nil {
		log = io.Discard
	}
	ln, err := net.Listen("tcp", a.cfg.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", a.cfg.Listen, err)
	}
	addr := ln.Addr().String()
	if a.cfg.Serving != nil {
		a.cfg.Serving(addr)
	}
	if a.cfg.OTLP != "" {
		stop, err := a.startOTLP(ctx, a.cfg.OTLP, a.cfg.Window)
		if err != nil {
			ln.Close()
			return err
		}
		defer stop()
	}
	// Each window takes the probes the last one loaded, emptied, instead
	// of loading and verifying them again: most of what the agent cost
	// on an idle target (docs/agent.md).
	probe.KeepLoaded(true)
	defer probe.KeepLoaded(false)
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", a.serveMetrics)
	mux.HandleFunc("/profile", a.serveProfile)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(shut)
	}()
	for ctx.Err() == nil {
		select {
		case err := <-served:
			return fmt.Errorf("serve %s: %w", addr, err)
		default:
		}
		start := time.Now()
		if err := a.window(ctx); err != nil && ctx.Err() == nil {
			a.mu.Lock()
			a.failed++
			a.mu.Unlock()
			fmt.Fprintf(log, "perfsleuth agent: window: %v\n", err)
		}
		// A window that ended early (no process, its processes gone)
		// waits out the rest of its length, so the agent does not spin.
		if rest := a.cfg.Window - time.Since(start); rest > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(rest):
			}
		}
	}
	return nil
}

// members are the processes of each selected cgroup now, and the pids
// given, by the cgroup label they go under.
func (a *Agent) members() (map[int]string, []string) {
	by := map[int]string{}
	var empty []string
	dirs := slices.Clone(a.cfg.Cgroups)
	// The containers now: one gone since the last window loses its
	// cgroup_info (its counters stay, as a counter must).
	kube := map[string]Container{}
	for _, kp := range a.cfg.Kubepods {
		for _, dir := range containersUnder(kp, a.cfg.MaxCgroups) {
			c, _ := kubeOf(dir)
			c.names(a.cfg.HostRoot)
			kube[dir] = c
			dirs = append(dirs, dir)
		}
	}
	if len(a.cfg.Kubepods) > 0 {
		a.mu.Lock()
		a.kube = kube
		a.mu.Unlock()
	}
	self := os.Getpid()
	for _, dir := range dirs {
		// The agent itself is left out of a cgroup that holds it (its own
		// pod's under --kubepods): observe refuses to watch itself, and
		// its cost has metrics of its own. Regression: every window of
		// such an agent failed ("perfsleuth cannot observe itself").
		pids := slices.DeleteFunc(inTree(dir), func(pid int) bool { return pid == self })
		for _, pid := range pids {
			by[pid] = dir
		}
		if len(pids) == 0 {
			empty = append(empty, dir)
		}
	}
	for _, pid := range a.cfg.PIDs {
		if alive(pid) {
			by[pid] = byPID
		} else {
			empty = append(empty, "pid "+strconv.Itoa(pid))
		}
	}
	return by, empty
}

// inTree lists the processes of cgroup dir and of every cgroup below it: a
// slice's are in its services' cgroups, and a hierarchy's root holds the
// whole machine (its kernel threads too, on cgroup v2).
func inTree(dir string) []int {
	var pids []int
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a cgroup removed meanwhile: the rest are listed
		}
		if d.IsDir() {
			pids = append(pids, proctree.InCgroup(path)...)
		}
		return nil
	})
	return pids
}

// window observes the members for one window and adds what it found.
func (a *Agent) window(ctx context.Context) error {
	by, empty := a.members()
	a.mu.Lock()
	for _, e := range empty {
		a.missing[e]++
	}
	a.mu.Unlock()
	if len(by) == 0 {
		return nil
	}
	// The metrics name no stack frame: the windows keep no process's
	// mappings for naming user frames (a profile asked for does).
	opts := a.cfg.Probe
	opts.NoUserNames = true
	run, err := observe(ctx, by, a.cfg.Window, opts)
	if err != nil && ctx.Err() == nil && slices.ContainsFunc(slices.Collect(maps.Keys(by)), func(pid int) bool { return !alive(pid) }) {
		// A process listed exited before the probes attached to it (a
		// short-lived one in a busy cgroup): list them again, once.
		if by, _ = a.members(); len(by) == 0 {
			return nil
		}
		run, err = observe(ctx, by, a.cfg.Window, opts)
	}
	if err != nil {
		return err
	}
	a.add(run, by)
	return nil
}

// alive says whether process pid is in /proc.
func alive(pid int) bool {
	_, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid)))
	return err == nil
}

// observe observes the processes of by (at least one) for d, as observe -p
// does, and analyses the record.
func observe(ctx context.Context, by map[int]string, d time.Duration, opts probe.Options) (*model.Run, error) {
	pids := slices.Sorted(maps.Keys(by))
	run, err := runner.Observe(ctx, target.NewGroup(target.NewPID(pids[0], d), pids[1:]), runner.Options{Probe: opts})
	if err != nil {
		return nil, err
	}
	analyze.Run(run)
	return run, nil
}

// add adds a window's run: each thread's seconds under its process's
// cgroup (a process born in the window under its cgroup now, read from
// /proc, or its parent's when gone: other) and name.
func (a *Agent) add(run *model.Run, by map[int]string) {
	ta := run.TimeAccounting
	a.mu.Lock()
	defer a.mu.Unlock()
	seen := map[string]bool{}
	for _, c := range by {
		seen[c] = true
	}
	for c := range seen {
		a.windows[c]++
		if ta != nil {
			a.observed[c] += ta.WindowSec
		}
		a.verdicts[c] = run.Verdict
	}
	if st := run.Storage; st != nil {
		if c := st.Cache; c != nil {
			if !c.PagesNotCounted {
				a.cached = true
				a.cache["lookups"] += float64(c.Lookups)
				a.cache["read_added"] += float64(c.ReadAdded)
				a.cache["other_added"] += float64(c.OtherAdded)
				a.cache["dirtied"] += float64(c.Dirtied)
			}
			a.cache["written_back_bytes"] += float64(c.WrittenBackBytes)
			a.cache["throttled"] += float64(c.Throttled)
			a.cache["throttled_sec"] += c.ThrottledSec
		}
		if sq := st.SQLite; sq != nil {
			for _, p := range sq.ByType {
				a.sqlite[[3]string{p.Kind, p.Type, "read"}] += float64(p.Reads)
				a.sqlite[[3]string{p.Kind, p.Type, "write"}] += float64(p.Writes)
			}
		}
		for _, d := range st.Devices {
			for _, op := range d.Ops {
				h := a.block[[2]string{d.Name, op.Op}]
				if h == nil {
					h = &hist{}
					a.block[[2]string{d.Name, op.Op}] = h
				}
				for _, r := range op.Service {
					h.add(r.High, r.Count)
				}
				h.sum += op.ServiceMeanSec * float64(op.Requests)
			}
		}
	}
	if ta == nil {
		return
	}
	for _, sc := range ta.Syncs {
		h := a.syncs[sc.Kind]
		if h == nil {
			h = &hist{}
			a.syncs[sc.Kind] = h
		}
		for _, b := range sc.Buckets {
			h.add(b.HighNs, b.Count)
		}
		h.sum += sc.TotalSec
	}
	a.probeCPU += ta.ProbeCPUSec
	a.dropped += float64(ta.Dropped)
	procName := map[int]string{}
	for _, t := range ta.Threads {
		if t.TID == t.PID || procName[t.PID] == "" {
			procName[t.PID] = t.Comm
		}
	}
	self := os.Getpid()
	born := map[int]string{} // cgroupOf per process, not per thread
	for _, t := range ta.Threads {
		// The agent's own threads are tracked when it descends from an
		// observed process (the shell that started it, in the root
		// cgroup): its cost has metrics of its own, not the workload's.
		if t.Idle || t.PID == self {
			continue
		}
		cg, ok := by[t.PID]
		if !ok {
			if cg, ok = born[t.PID]; !ok {
				cg = a.cgroupOf(t.PID)
				born[t.PID] = cg
			}
		}
		name := a.nameFor(cg, procName[t.PID])
		for cat, v := range t.Seconds {
			a.seconds[seriesKey{cg, name, cat}] += v
		}
	}
}

// cgroupOf is the selected cgroup pid (born in the window) is in now, or
// other. a.mu is held.
func (a *Agent) cgroupOf(pid int) string {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return other
	}
	groups, err := p.Cgroups()
	if err != nil {
		return other
	}
	dirs := slices.Clone(a.cfg.Cgroups) // a.mu is held (add)
	for dir := range a.kube {
		dirs = append(dirs, dir)
	}
	for _, dir := range dirs {
		for _, g := range groups {
			if within(dir, g.Path) {
				return dir
			}
		}
	}
	return other
}

// within says whether a process whose cgroup (in some hierarchy) is path
// belongs to the cgroup directory dir: dir is the mount point of that
// hierarchy followed by path or one of its ancestors. A hierarchy's root
// (a dir whose parent holds no cgroup.procs) holds every path.
func within(dir, path string) bool {
	for p := path; p != "/" && p != "." && p != ""; p = filepath.Dir(p) {
		if strings.HasSuffix(dir, p) {
			return true
		}
	}
	_, err := os.Stat(filepath.Join(filepath.Dir(dir), "cgroup.procs"))
	return os.IsNotExist(err) && path != ""
}

// nameFor is the process label of name in cgroup cg: the name, while the
// cgroup has fewer than MaxProcesses names, else other.
func (a *Agent) nameFor(cg, name string) string {
	if name == "" {
		name = other
	}
	have := a.names[cg]
	if slices.Contains(have, name) {
		return name
	}
	if len(have) < a.cfg.MaxProcesses {
		a.names[cg] = append(have, name)
		return name
	}
	return other
}

// maxProfile bounds /profile's seconds.
const maxProfile = 5 * time.Minute

// serveProfile answers /profile?seconds=N (default 10): the on-CPU and
// off-CPU stacks of the selected processes over N seconds, as a gzipped
// pprof profile (the same as observe --stacks and export --pprof), taken
// by an observation of their own beside the windows. With push=otlp the
// profile goes to the --otlp collector instead, as OTLP profiles
// (pushProfiles), and the answer says what was sent.
func (a *Agent) serveProfile(w http.ResponseWriter, r *http.Request) {
	push := r.URL.Query().Get("push")
	switch {
	case push != "" && push != "otlp":
		http.Error(w, fmt.Sprintf("push=%s: the one place a profile is pushed to is otlp (push=otlp), the --otlp collector", push), http.StatusBadRequest)
		return
	case push == "otlp" && a.cfg.OTLP == "":
		http.Error(w, "push=otlp: no collector to push to: start the agent with --otlp ADDRESS (e.g. http://otel-collector:4318)", http.StatusBadRequest)
		return
	}
	secs := 10 * time.Second
	if v := r.URL.Query().Get("seconds"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || time.Duration(n)*time.Second > maxProfile {
			http.Error(w, fmt.Sprintf("seconds=%s: give whole seconds from 1 to %d", v, int(maxProfile.Seconds())), http.StatusBadRequest)
			return
		}
		secs = time.Duration(n) * time.Second
	}
	if !a.profiling.TryLock() {
		http.Error(w, "a profile is being taken: ask again when it is done", http.StatusTooManyRequests)
		return
	}
	defer a.profiling.Unlock()
	by, _ := a.members()
	if len(by) == 0 {
		http.Error(w, "no process to profile: the selected cgroups are empty or gone", http.StatusNotFound)
		return
	}
	opts := a.cfg.Probe
	opts.Stacks = true
	run, err := observe(r.Context(), by, secs, opts)
	if err != nil {
		http.Error(w, "profile: "+err.Error(), http.StatusInternalServerError)
		return
	}
	b, err := export.Pprof(run)
	if err != nil {
		http.Error(w, "profile: "+err.Error(), http.StatusInternalServerError)
		return
	}
	if push == "otlp" {
		msg, err := pushProfiles(r.Context(), a.cfg.OTLP, b)
		if err != nil {
			http.Error(w, "profile: "+err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, msg)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="perfsleuth.pb.gz"`)
	w.Write(b)
}

// serveMetrics answers a scrape: OpenMetrics when the scraper asks for it,
// else the Prometheus text format.
func (a *Agent) serveMetrics(w http.ResponseWriter, r *http.Request) {
	open := strings.Contains(r.Header.Get("Accept"), "application/openmetrics-text")
	body, err := a.metrics().Encode(open)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if open {
		w.Header().Set("Content-Type", "application/openmetrics-text; version=1.0.0; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	}
	w.Write(body)
}

// metrics is the samples now.
func (a *Agent) metrics() *export.Metrics {
	m := export.NewMetrics()
	a.mu.Lock()
	for k, v := range a.seconds {
		m.Counter("agent_time_seconds_total", "Seconds the observed threads spent in each category (docs/probes.md), by cgroup and process name, over the windows observed; idle threads left out.",
			v, "cgroup", k.cgroup, "process", k.process, "category", k.category)
	}
	for cg, n := range a.windows {
		m.Counter("agent_windows_total", "Windows in which the cgroup had processes and was observed.", n, "cgroup", cg)
		m.Counter("agent_observed_seconds_total", "Seconds of the cgroup's windows (the seconds of agent_time_seconds_total add up to this, times its threads).", a.observed[cg], "cgroup", cg)
		if v := a.verdicts[cg]; v != nil {
			m.Gauge("agent_verdict_info", "The last window's verdict for the cgroup: its primary and close secondary category (always 1).", 1,
				"cgroup", cg, "primary", v.Primary, "secondary", v.Secondary)
		}
	}
	if len(a.cache) > 0 {
		if a.cached {
			m.Counter("agent_page_cache_lookups_total", "Pages the observed processes' buffered reads looked up in the page cache (with --storage).", a.cache["lookups"])
			m.Counter("agent_page_cache_read_added_total", "Pages added to the page cache during their reads: misses and their readahead (with --storage).", a.cache["read_added"])
			m.Counter("agent_page_cache_other_added_total", "Pages added outside read calls: writes to new pages, mmap faults (with --storage).", a.cache["other_added"])
			m.Counter("agent_page_cache_dirtied_total", "Pages the observed processes dirtied (with --storage).", a.cache["dirtied"])
		}
		m.Counter("agent_page_cache_written_back_bytes_total", "Bytes of block write requests for the observed processes' files, whoever issued them.", a.cache["written_back_bytes"])
		m.Counter("agent_page_cache_throttled_total", "Dirty-page balancing pauses of the observed processes.", a.cache["throttled"])
		m.Counter("agent_page_cache_throttled_seconds_total", "Their summed length, as the kernel planned it.", a.cache["throttled_sec"])
	}
	for k, v := range a.sqlite {
		m.Counter("agent_sqlite_page_ops_total", "Reads and writes of SQLite pages by file kind and page type (with --storage): b-tree leaf and interior pages, overflow, freelist, WAL frames, journal records.", v,
			"kind", k[0], "type", k[1], "op", k[2])
	}
	for kind, h := range a.syncs {
		m.Histogram("agent_sync_duration_seconds", "Latency of the observed processes' sync calls (fsync, fdatasync, O_SYNC/O_DSYNC writes, ...), by kind, over the windows; all the observed processes together (docs/agent.md).",
			histLe, h.counts[:], h.count, h.sum, "kind", kind)
	}
	for k, h := range a.block {
		m.Histogram("agent_block_service_seconds", "Time block requests spent in the device's driver, by device and op, over the windows: every request the device served, not only the observed processes' (docs/agent.md).",
			histLe, h.counts[:], h.count, h.sum, "device", k[0], "op", k[1])
	}
	for cg, c := range a.kube {
		m.Gauge("agent_cgroup_info", "A Kubernetes container's cgroup: its namespace, pod and container (from the container runtime's state; empty where it could not be read) (always 1).", 1,
			"cgroup", cg, "namespace", c.Namespace, "pod", c.Pod, "pod_uid", c.PodUID, "container", c.Container, "container_id", c.ID)
	}
	for cg, n := range a.missing {
		m.Counter("agent_target_missing_total", "Windows in which a selected cgroup had no process or was gone, or a pid had exited.", n, "target", cg)
	}
	m.Counter("agent_window_errors_total", "Windows whose observation failed (the log says why).", a.failed)
	m.Counter("agent_probe_cpu_seconds_total", "CPU seconds the eBPF programs took in the windows (estimated: runs × cost calibrated on the host), over all CPUs.", a.probeCPU)
	m.Counter("agent_probe_dropped_events_total", "Events the time-accounting probe could not record (full maps).", a.dropped)
	series := len(a.seconds)
	a.mu.Unlock()
	m.Gauge("agent_series", "Series of perfsleuth_agent_time_seconds_total: at most cgroups x (max-processes + 1) x categories.", float64(series))
	if self, err := procfs.Self(); err == nil {
		if st, err := self.Stat(); err == nil {
			m.Counter("agent_cpu_seconds_total", "CPU seconds of the agent process itself (user and system), loading and reading the probes included; the eBPF programs' own time is agent_probe_cpu_seconds_total.", st.CPUTime())
			m.Gauge("agent_resident_memory_bytes", "The agent's resident memory.", float64(st.ResidentMemory()))
		}
	}
	taken, loaded := probe.PoolCounts()
	const loads = "eBPF collections the windows needed, by how: loaded (and verified by the kernel) or kept (taken from the last window's, emptied; docs/agent.md)."
	m.Counter("agent_probe_loads_total", loads, float64(loaded), "how", "loaded")
	m.Counter("agent_probe_loads_total", loads, float64(taken), "how", "kept")
	m.Gauge("agent_window_seconds", "The length of one window.", a.cfg.Window.Seconds())
	host, _ := os.Hostname()
	m.Gauge("agent_info", "The agent (always 1).", 1, "hostname", host)
	return m
}
