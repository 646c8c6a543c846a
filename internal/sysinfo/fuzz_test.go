package sysinfo

import (
	"slices"
	"strings"
	"testing"
)

// FuzzCPUList: any text gives ascending-or-listed ids from 0 to MaxCPUID
// without running away (a range of billions is refused, not allocated),
// and a list written by FormatCPUList parses back to the same ids.
func FuzzCPUList(f *testing.F) {
	f.Add("0-3,5,7-8\n")
	f.Add("0-4294967295")
	f.Add("-1,3-2,,x,9")
	f.Add("65535,65536")
	f.Fuzz(func(t *testing.T, s string) {
		ids := ParseCPUList(s)
		if len(ids) > (strings.Count(s, ",")+1)*(MaxCPUID+1) {
			t.Fatalf("ParseCPUList(%q): %d ids", s, len(ids))
		}
		for _, id := range ids {
			if id < 0 || id > MaxCPUID {
				t.Fatalf("ParseCPUList(%q) has id %d", s, id)
			}
		}
		set := slices.Compact(slices.Sorted(slices.Values(ids)))
		if got := ParseCPUList(FormatCPUList(set)); !slices.Equal(got, set) {
			t.Errorf("ParseCPUList(FormatCPUList(%v)) = %v", set, got)
		}
	})
}

// FuzzCPUInfo: any cpuinfo text gives blocks that each have a processor
// key, and never panics.
func FuzzCPUInfo(f *testing.F) {
	f.Add([]byte("processor\t: 0\nmodel name\t: X\n\nprocessor\t: 1\nmodel name\t: X\n"))
	f.Add([]byte("processor : 0\nprocessor : 1\nCPU part : 0xd0c\n\nHardware : BCM\n"))
	f.Add([]byte(":\n:::\n\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cpus, _ := parseCPUInfo(data)
		for _, c := range cpus {
			if _, ok := c["processor"]; !ok {
				t.Errorf("block %v without a processor", c)
			}
		}
	})
}

// FuzzUnescapeMountinfo: a path escaped the way the kernel's mountinfo
// escapes it (space, tab, newline and backslash as octal) comes back as
// it was; any other text never panics.
func FuzzUnescapeMountinfo(f *testing.F) {
	f.Add("/mnt/my disk")
	f.Add(`/a\b`)
	f.Add("\\04")
	f.Add("\\777")
	f.Fuzz(func(t *testing.T, path string) {
		UnescapeMountinfo(path)
		esc := strings.NewReplacer(" ", `\040`, "\t", `\011`, "\n", `\012`, `\`, `\134`).Replace(path)
		if got := UnescapeMountinfo(esc); got != path {
			t.Errorf("UnescapeMountinfo(%q) = %q, want %q", esc, got, path)
		}
	})
}
