// Package proctree finds a process's descendants from /proc: the set of
// processes a workload is made of, for the probes that follow it and for
// stopping it.
package proctree

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Descendants returns the pids of the processes below root in procRoot
// (/proc), read from each process's stat ppid.
func Descendants(procRoot string, root int) ([]int, error) {
	return Below(procRoot, []int{root})
}

// Below returns the pids of the processes below any of roots in procRoot
// (/proc), each once and none of the roots, from one pass over procRoot.
// Regression: a pass per root made an agent of a whole machine's root
// cgroup (170 processes, each a root) spend 56% of its CPU time reading
// /proc/PID/stat, each process's once per root.
func Below(procRoot string, roots []int) ([]int, error) {
	ents, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", procRoot, err)
	}
	children := map[int][]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(procRoot, e.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		ppid, ok := StatPPID(string(b))
		if !ok {
			continue
		}
		children[ppid] = append(children[ppid], pid)
	}
	var out []int
	queue := slices.Clone(roots)
	seen := map[int]bool{}
	for _, r := range roots {
		seen[r] = true
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out, nil
}

// StatState is the state letter of a /proc/<pid>/stat (or task stat) line
// (R, S, D, Z, X, ...), 0 when the line has none: the state is the 3rd
// field, counted after the last ')' as comm may hold both.
func StatState(stat []byte) byte {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return 0
	}
	return stat[i+2]
}

// StatRunnable says whether a /proc/<pid>/stat (or task stat) line is of a
// task in state R (running or waiting for a CPU).
func StatRunnable(stat []byte) bool {
	return StatState(stat) == 'R'
}

// StatComm is the comm (field 2) of a /proc/<pid>/stat line: what lies
// between its first '(' and its last ')', "" when it has none.
func StatComm(stat []byte) string {
	l, r := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if l < 0 || r < l {
		return ""
	}
	return string(stat[l+1 : r])
}

// StatPPID returns the 4th field of /proc/<pid>/stat; comm (field 2) may
// contain spaces and parentheses, so fields are counted after the last ')'.
func StatPPID(stat string) (int, bool) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

// InCgroup lists the processes in the cgroup directory dir (its
// cgroup.procs, v1 or v2); none when it cannot be read (gone).
func InCgroup(dir string) []int {
	b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(f); err == nil {
			pids = append(pids, p)
		}
	}
	return pids
}
