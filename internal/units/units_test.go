package units

import (
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		bad  bool
	}{
		{"4096", 4096, false},
		{"4k", 4096, false},
		{"4K", 4096, false},
		{"4KiB", 4096, false},
		{"4KB", 4096, false},
		{"1m", 1 << 20, false},
		{"1GiB", 1 << 30, false},
		{"1.5g", 3 << 29, false},
		{"2t", 2 << 40, false},
		{"512b", 512, false},
		{"", 0, true},
		{"abc", 0, true},
		{"-4k", 0, true},
		{"99999999999t", 0, true},
		{"NaN", 0, true},
	}
	for _, c := range cases {
		got, err := ParseSize(c.in)
		if c.bad {
			if err == nil {
				t.Errorf("ParseSize(%q) = %d, want an error", c.in, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
}

func TestFormat(t *testing.T) {
	if got := FormatSize(4096); got != "4 KiB" {
		t.Errorf("FormatSize(4096) = %q", got)
	}
	if got := FormatSize(3 << 29); got != "1.5 GiB" {
		t.Errorf("FormatSize(1.5GiB) = %q", got)
	}
	if got := FormatSize(100); got != "100 B" {
		t.Errorf("FormatSize(100) = %q", got)
	}
	if got := FormatNs(1234); got != "1.23µs" {
		t.Errorf("FormatNs(1234) = %q", got)
	}
	if got := FormatNs(15_600_000); got != "15.6ms" {
		t.Errorf("FormatNs = %q", got)
	}
	if got := FormatCount(1234567); got != "1,234,567" {
		t.Errorf("FormatCount = %q", got)
	}
	if got := FormatCount(-1000); got != "-1,000" {
		t.Errorf("FormatCount(-1000) = %q", got)
	}
	if got := FormatDuration(125 * time.Second); got != "2m05s" {
		t.Errorf("FormatDuration = %q", got)
	}
}

func TestFormatChange(t *testing.T) {
	for x, want := range map[float64]string{0.07: "+7%", -0.07: "-7%", -0.004: "+0%", 0.004: "+0%", 0: "+0%", -0.5: "-50%", 1: "+100%"} {
		if got := FormatChange(x); got != want {
			t.Errorf("FormatChange(%v) = %q, want %q", x, got, want)
		}
	}
}
