// Package units parses and formats the sizes, durations and rates that
// perfsleuth's flags take and its reports print.
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Size suffixes are binary, as fio's are by default (kb_base=1024): 4k, 4K,
// 4KiB and 4KB are all 4096 bytes. A benchmark flag that silently meant 4000
// would misalign every O_DIRECT request.
var sizeSuffixes = []struct {
	suffix string
	shift  uint
}{
	{"kib", 10}, {"mib", 20}, {"gib", 30}, {"tib", 40},
	{"kb", 10}, {"mb", 20}, {"gb", 30}, {"tb", 40},
	{"k", 10}, {"m", 20}, {"g", 30}, {"t", 40},
	{"b", 0},
}

// ParseSize parses "4096", "4k", "1MiB", "1.5g" into bytes.
func ParseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "" {
		return 0, fmt.Errorf("empty size")
	}
	shift := uint(0)
	for _, suf := range sizeSuffixes {
		if strings.HasSuffix(t, suf.suffix) {
			t = strings.TrimSpace(strings.TrimSuffix(t, suf.suffix))
			shift = suf.shift
			break
		}
	}
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("size %q is negative", s)
		}
		if n > math.MaxInt64>>shift {
			return 0, fmt.Errorf("size %q is too large", s)
		}
		return n << shift, nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a size: use bytes or a number with k, m, g or t (binary: 4k = 4096)", s)
	}
	if f < 0 {
		return 0, fmt.Errorf("size %q is negative", s)
	}
	v := f * float64(int64(1)<<shift)
	if v > math.MaxInt64/2 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return int64(v), nil
}

// FormatSize prints bytes the short way: 4096 -> "4 KiB", 1.5 GiB -> "1.5 GiB".
func FormatSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	s := strconv.FormatFloat(v, 'f', 1, 64)
	s = strings.TrimSuffix(s, ".0")
	return s + " " + string("KMGTPE"[exp]) + "iB"
}

// FormatNs prints a latency with 3 significant digits in a fitting unit.
func FormatNs(ns float64) string {
	switch {
	case ns <= 0:
		return "0"
	case ns < 1e3:
		return sig3(ns) + "ns"
	case ns < 1e6:
		return sig3(ns/1e3) + "µs"
	case ns < 1e9:
		return sig3(ns/1e6) + "ms"
	default:
		return sig3(ns/1e9) + "s"
	}
}

func sig3(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// FormatDuration prints a duration for humans: "850ms", "12.3s", "2m05s".
func FormatDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	default:
		m := int(d / time.Minute)
		s := int((d % time.Minute) / time.Second)
		return fmt.Sprintf("%dm%02ds", m, s)
	}
}

// FormatCount prints an integer with thousands separators: 1234567 -> "1,234,567".
func FormatCount(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// FormatChange formats a relative change (0.07 for 7% more) as a signed
// whole percentage, "+7%" or "-7%"; a change that rounds to nothing is
// "+0%", never "-0%".
func FormatChange(x float64) string {
	p := math.Round(x * 100)
	if p == 0 {
		p = 0 // clears a negative zero
	}
	return fmt.Sprintf("%+.0f%%", p)
}

// ShellJoin joins argv as a shell would read it back: an argument with
// anything but letters, digits and -_./=:,+@% is single-quoted (a single
// quote inside is closed, escaped and reopened), so that "bash -c 'sqlite3 t.db < script.sql'" is not
// shown as bash -c sqlite3 t.db < script.sql.
func ShellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
		}) < 0 {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}
