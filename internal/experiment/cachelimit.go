package experiment

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// cache-limit asks what a smaller page cache would cost the workload
// (less memory, more tenants): its process tree runs in a memory cgroup
// whose limit leaves its page cache at most a budget, while its other
// memory (heap, stacks, page tables) is not limited.
//
// Two facts of the kernel shape it. Page cache is charged to the cgroup
// of the task that first brought it in, and stays there: pages cached
// before the run belong to another cgroup and no limit on the workload's
// would evict them. So each run starts as cold-cache's do (its files
// evicted, or the whole cache dropped), and what it reads again is then
// charged to its own cgroup. And a memory limit limits all of a cgroup's
// memory, not its page cache alone: so the limit follows the workload's
// other memory, every cacheFollowEvery, at that plus the budget. On
// cgroup v2 the limit is memory.high (above it the kernel reclaims and
// throttles; nothing is killed); on v1 it is memory.limit_in_bytes with
// the OOM killer disabled for the cgroup (memory.oom_control), so a
// workload whose own memory outgrows the limit between two steps waits
// for the next step's higher limit instead of being killed.

// cacheLimitShare is the default budget's share of the workload's files.
const cacheLimitShare = 0.5

// cacheFollowEvery is how often the limit follows the workload's memory.
const cacheFollowEvery = 50 * time.Millisecond

// cacheFilesMax bounds the walk that sizes the workload's files.
const cacheFilesMax = 200000

// memoryLimit is cache-limit's cgroup: made with no limit on v2 (the
// follower sets memory.high) and with the OOM killer disabled on v1.
func memoryLimit() cgroupLimit {
	return cgroupLimit{
		v2Controller: "memory", v1Controller: "memory",
		v2: [][2]string{{"memory.high", "max"}},
		v1: [][2]string{{"memory.oom_control", "1"}},
	}
}

// filesSize is the size of the regular files at or below paths, walking
// at most cacheFilesMax entries.
func filesSize(paths []string) (int64, error) {
	var total int64
	seen := 0
	errTooMany := errors.New("too many files")
	for _, root := range paths {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if seen++; seen > cacheFilesMax {
				return errTooMany
			}
			if d.Type().IsRegular() {
				if info, err := d.Info(); err == nil {
					total += info.Size()
				}
			}
			return nil
		})
		if errors.Is(err, errTooMany) {
			return 0, fmt.Errorf("more than %d files under %s: give --cache-limit SIZE", cacheFilesMax, strings.Join(paths, ", "))
		}
		if err != nil {
			return 0, err
		}
	}
	return total, nil
}

// prepareCacheLimit sizes the budget and finds where the cgroups go.
func prepareCacheLimit(_ context.Context, e *env) ([]string, error) {
	budget, whose := e.cacheBudget, "given with --cache-limit"
	switch {
	case budget > 0:
	case e.target != nil && e.target.FileIO != nil:
		// Its files are made by its first run, after this.
		size := e.target.FileIO.Size
		budget = int64(cacheLimitShare * float64(size))
		whose = fmt.Sprintf("%.0f%% of fileio's %s of files", cacheLimitShare*100, units.FormatSize(size))
	case e.target != nil:
		return nil, fmt.Errorf("the %s benchmark's files are made by its first run, after the conditions are set: give --cache-limit SIZE (the page cache to leave it)", e.target.Kind)
	case len(e.evict) == 0:
		return nil, errors.New("the workload's files are not known: give --cache-limit SIZE (the page cache to leave it), or --evict PATH (its files; half of their size is left)")
	default:
		size, err := filesSize(e.evict)
		if err != nil {
			return nil, err
		}
		budget = int64(cacheLimitShare * float64(size))
		whose = fmt.Sprintf("%.0f%% of the %s of files under %s", cacheLimitShare*100, units.FormatSize(size), strings.Join(e.evict, ", "))
	}
	if budget < 1<<20 {
		return nil, fmt.Errorf("a page cache of %s (%s) is too little to tell from a cold one: give --cache-limit SIZE of 1 MiB or more", units.FormatSize(budget), whose)
	}
	l := memoryLimit()
	p, err := findCgroupPlace(l)
	if err != nil {
		return nil, err
	}
	e.cacheBudget, e.cachePlace = budget, p
	cold := "the whole machine's page cache dropped before each run (sync; vm.drop_caches=1)"
	if len(e.evict) > 0 {
		cold = fmt.Sprintf("the page cache of the files under %s evicted before each run", strings.Join(e.evict, ", "))
	}
	limit := "memory.high"
	if p.version == 1 {
		limit = "memory.limit_in_bytes (v1 has no memory.high; its OOM killer is disabled for the cgroup, memory.oom_control = 1, so a workload that outgrows it waits for the next step instead of being killed)"
	}
	return []string{
		fmt.Sprintf("the workload's page cache held to %s (%s), its other memory not limited", units.FormatSize(budget), whose),
		cold + ", as cold-cache does: page cache is charged to the cgroup that first reads it, so the workload's must be read again inside its own",
		fmt.Sprintf("%s, every %s set to the cgroup's memory other than page cache plus %s", limit, cacheFollowEvery, units.FormatSize(budget)),
		"at the limit the workload's own threads reclaim its page cache before they can cache more (a cgroup's limit is reclaimed by the tasks that charge it), as in a container with that memory limit: their CPU time grows with it",
		limitWords(p, l),
	}, nil
}

// applyCacheLimit makes the run's cgroup; before evicts the workload's
// files, moves its process tree in and starts the follower.
func applyCacheLimit(_ context.Context, e *env) (func([]int) error, func(), error) {
	cg, err := makeCgroup(e.cachePlace, memoryLimit())
	if err != nil {
		return nil, func() {}, err
	}
	f := &cacheFollower{dir: cg.dir, version: e.cachePlace.version, budget: e.cacheBudget, done: make(chan struct{})}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			f.stop()
			// No limit first: a process still in the cgroup (a daemon the
			// workload left) must not stay waiting for memory (v1's OOM
			// killer is off there) once nothing follows it.
			f.unlimit()
			cg.remove()
		})
	}
	before := func(pids []int) error {
		if len(e.evict) == 0 {
			if err := dropCaches(); err != nil {
				return err
			}
		} else if err := evict(e.evict); err != nil {
			return err
		}
		if err := f.step(); err != nil {
			return err
		}
		if err := cg.enter(pids); err != nil {
			return err
		}
		f.start()
		return nil
	}
	return before, stop, nil
}

// cacheFollower keeps a memory cgroup's limit at its memory other than
// page cache plus the budget.
type cacheFollower struct {
	dir     string
	version int
	budget  int64
	done    chan struct{}
	wg      sync.WaitGroup
}

// memoryOf reads the cgroup's memory in use and the page cache part of it.
func (f *cacheFollower) memoryOf() (usage, cache int64, err error) {
	usageFile, cacheKey := "memory.current", "file"
	if f.version == 1 {
		usageFile, cacheKey = "memory.usage_in_bytes", "cache"
	}
	usage, err = strconv.ParseInt(sysinfo.ReadString(filepath.Join(f.dir, usageFile)), 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("read %s of %s: %w", usageFile, f.dir, err)
	}
	for _, line := range strings.Split(sysinfo.ReadString(filepath.Join(f.dir, "memory.stat")), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == cacheKey {
			cache, _ = strconv.ParseInt(v, 10, 64)
			break
		}
	}
	return usage, cache, nil
}

// step sets the limit once.
func (f *cacheFollower) step() error {
	usage, cache, err := f.memoryOf()
	if err != nil {
		return err
	}
	limit := max(usage-cache, 0) + f.budget
	file, _ := f.limitFile()
	if err := os.WriteFile(filepath.Join(f.dir, file), []byte(strconv.FormatInt(limit, 10)), 0); err != nil {
		return fmt.Errorf("write %d to %s: %w", limit, filepath.Join(f.dir, file), err)
	}
	return nil
}

// limitFile is the file of the cgroup's limit, and its value for none.
func (f *cacheFollower) limitFile() (file, none string) {
	if f.version == 1 {
		return "memory.limit_in_bytes", "-1"
	}
	return "memory.high", "max"
}

// unlimit lifts the limit.
func (f *cacheFollower) unlimit() {
	file, none := f.limitFile()
	os.WriteFile(filepath.Join(f.dir, file), []byte(none), 0)
}

func (f *cacheFollower) start() {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		t := time.NewTicker(cacheFollowEvery)
		defer t.Stop()
		for {
			select {
			case <-f.done:
				return
			case <-t.C:
				f.step() // a step that fails (the cgroup going) is retried at the next
			}
		}
	}()
}

func (f *cacheFollower) stop() {
	close(f.done)
	f.wg.Wait()
}
