package analyze

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/symbolize"
)

// cpu.kernel_path: one kernel code path takes a large part of the
// workload's on-CPU samples while its cpu time matters. tar extracting 20k
// small files read "CPU-bound 98%, sys 100%" and nothing more; its samples
// put 30% in recently_deleted <- find_inode_bit <- __ext4_new_inode (ext4
// skipping recently freed inodes). The path is the most specific kernel
// function (the one with the fewest samples) that kernelPathShare of the
// samples pass through, the syscall entry's generic frames left out.
const (
	kernelPathShare      = 0.30
	kernelPathMinSamples = 25
	kernelPathCPUShare   = 0.25
)

// genericKernel are frames every syscall or interrupt passes through:
// they name no cause.
var genericKernel = []string{"entry_SYSCALL_64_after_hwframe", "entry_SYSCALL_64", "do_syscall_64", "x64_sys_call", "syscall_exit_to_user_mode",
	"asm_exc_page_fault", "exc_page_fault", "irqentry_exit_to_user_mode", "ret_from_fork", "ret_from_fork_asm"}

// isGenericKernel says whether a kernel function is a generic frame
// (genericKernel) or a syscall's wrapper (__x64_sys_pread64: the syscall,
// not a path in it).
func isGenericKernel(name string) bool {
	for _, p := range []string{"__x64_sys_", "__ia32_sys_", "__se_sys_", "__do_sys_", "ksys_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return slices.Contains(genericKernel, name)
}

// kernelPathWords says what some kernel functions do, for the finding.
var kernelPathWords = map[string]string{
	"filemap_read":                    "reads served from the page cache (copying cached file data)",
	"filemap_get_pages":               "page-cache lookups",
	"filemap_get_read_batch":          "page-cache lookups",
	"__ext4_new_inode":                "ext4 inode allocation (creating files)",
	"find_inode_bit":                  "ext4 searching its inode bitmaps for a free inode",
	"recently_deleted":                "ext4 skipping recently deleted inodes while allocating one",
	"ext4_sync_file":                  "the ext4 flush path (fsync)",
	"jbd2_journal_commit_transaction": "the journal commit",
	"generic_perform_write":           "buffered writes into the page cache",
	"ext4_buffered_write_iter":        "buffered writes into the page cache",
	"copy_page_to_iter":               "copying file data to user memory",
	"clear_page_erms":                 "zeroing new memory pages",
	"do_anonymous_page":               "page faults on new anonymous memory",
	"link_path_walk":                  "path lookups (open, stat)",
	"path_openat":                     "opening files",
}

func cpuKernelPath(run *model.Run) *model.Finding {
	ta := run.TimeAccounting
	if ta == nil || len(ta.OnCPU) == 0 {
		return nil
	}
	cpuShare := share(ta, model.CatCPU)
	if cpuShare < kernelPathCPUShare {
		return nil
	}
	busy := map[int]bool{}
	for _, t := range ta.Threads {
		busy[t.TID] = !t.Idle && !t.Poller
	}
	var all int64
	through := map[string]int64{} // samples whose kernel stack holds the function
	depth := map[string]int{}     // its least distance from the innermost frame
	for _, s := range ta.OnCPU {
		if b, ok := busy[s.TID]; ok && !b {
			continue
		}
		all += s.Samples
		seen := map[string]bool{}
		for i, f := range s.Kernel {
			name := symbolize.Function(f)
			if seen[name] || isGenericKernel(name) {
				continue
			}
			seen[name] = true
			through[name] += s.Samples
			if d, ok := depth[name]; !ok || i < d {
				depth[name] = i
			}
		}
	}
	if all < kernelPathMinSamples {
		return nil
	}
	var best string
	for _, name := range slices.Sorted(maps.Keys(through)) {
		n := through[name]
		if float64(n) < kernelPathShare*float64(all) {
			continue
		}
		// The fewest samples; of equal ones, the innermost.
		if best == "" || n < through[best] || n == through[best] && depth[name] < depth[best] {
			best = name
		}
	}
	if best == "" {
		return nil
	}
	pathShare := float64(through[best]) / float64(all)
	// Its callers, from the stack with the most samples through it.
	var callers []string
	var top int64
	for _, s := range ta.OnCPU {
		for i, f := range s.Kernel {
			if symbolize.Function(f) == best && s.Samples > top {
				top = s.Samples
				callers = nil
				for _, c := range s.Kernel[i+1:] {
					if n := symbolize.Function(c); !isGenericKernel(n) && len(callers) < 3 {
						callers = append(callers, n)
					}
				}
			}
		}
	}
	what := best
	if w, ok := kernelPathWords[best]; ok {
		what += " (" + w + ")"
	}
	ev := []string{fmt.Sprintf("%d of %d on-CPU samples of the busy threads (%.0f%%) passed through %s", through[best], all, pathShare*100, best)}
	if len(callers) > 0 {
		ev = append(ev, "called from "+strings.Join(callers, " <- "))
	}
	// Its innermost functions, where the time was spent.
	self := map[string]int64{}
	for _, s := range ta.OnCPU {
		for _, f := range s.Kernel {
			if symbolize.Function(f) == best {
				self[symbolize.Function(s.Kernel[0])] += s.Samples
				break
			}
		}
	}
	leaves := slices.SortedFunc(maps.Keys(self), func(a, b string) int { return cmp.Or(cmp.Compare(self[b], self[a]), strings.Compare(a, b)) })
	var lv []string
	for _, l := range leaves[:min(3, len(leaves))] {
		lv = append(lv, fmt.Sprintf("%s %.0f%%", l, float64(self[l])/float64(all)*100))
	}
	ev = append(ev, "the samples in it fell in "+strings.Join(lv, ", "),
		fmt.Sprintf("the busy threads were on a CPU %.0f%% of their time: this path took about %.0f%% of it", cpuShare*100, pathShare*cpuShare*100))
	if ta.OnCPUSource == model.OnCPUTick {
		ev = append(ev, fmt.Sprintf("samples at the scheduler tick (%d Hz per busy CPU); --stacks takes more, with a cpu-clock event on every CPU", ta.OnCPUHz))
	}
	s := pathShare * cpuShare
	f := &model.Finding{
		Severity: "info",
		Summary:  fmt.Sprintf("%.0f%% of the workload's CPU samples were in one kernel path: %s", pathShare*100, what),
		Evidence: ev,
		Test:     &model.FindingTest{Name: "share of on-CPU samples through the path", Value: pathShare, Op: ">=", Threshold: kernelPathShare},
		Share:    &s,
	}
	if s >= materialShare {
		f.Severity = "warning"
	}
	return f
}
