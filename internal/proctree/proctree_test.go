package proctree

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestStatPPID(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"42 (bash) S 7 42 42 0", 7, true},
		{"42 (a) b) (c) R 9 1", 9, true},
		{"garbage", 0, false},
	} {
		got, ok := StatPPID(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("StatPPID(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestStatRunnable(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"42 (bash) R 7 42 42 0", true},
		{"42 (bash) S 7 42 42 0", false},
		{"42 (a) R b) S 9 1", false},
		{"42 (a) S b) R 9 1", true},
		{"garbage", false},
		{"42 (x)", false},
	} {
		if got := StatRunnable([]byte(tc.in)); got != tc.want {
			t.Errorf("StatRunnable(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestStatState(t *testing.T) {
	for in, want := range map[string]byte{
		"42 (bash) Z 7 42 42 0":  'Z',
		"42 (a) S b) X 9 1":      'X',
		"42 (sleep) S 7 42 42 0": 'S',
		"garbage":                0,
		"42 (x)":                 0,
	} {
		if got := StatState([]byte(in)); got != want {
			t.Errorf("StatState(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDescendants(t *testing.T) {
	root := t.TempDir()
	for _, p := range []struct{ pid, ppid string }{{"1", "0"}, {"10", "1"}, {"11", "10"}, {"12", "11"}, {"20", "1"}, {"30", "20"}} {
		dir := filepath.Join(root, p.pid)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(p.pid+" (x) S "+p.ppid+" 0 0"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Descendants(root, 10)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, []int{11, 12}) {
		t.Errorf("Descendants of 10 = %v, want [11 12]", got)
	}
	// Several roots, one below another (an agent's cgroup lists every
	// process in it): each process below any of them once, no root.
	for _, c := range []struct {
		roots []int
		want  []int
	}{
		{[]int{10, 20}, []int{11, 12, 30}},
		{[]int{1, 11, 10}, []int{12, 20, 30}},
		{[]int{12, 30}, nil},
	} {
		got, err := Below(root, c.roots)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("Below %v = %v, want %v", c.roots, got, c.want)
		}
	}
}
