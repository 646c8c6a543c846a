// Package toolresult reads a benchmark's own result from what it printed:
// fio (json, json+ and normal output), sysbench (fileio, cpu, OLTP),
// pgbench and redis-benchmark (summary, -q and --csv), or the number a
// --metric regex names in any program's output. perfsleuth then presents
// the program's result (IOPS, tps, requests/s) instead of the wall time of
// a run the program timed itself.
package toolresult

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/stats"
)

// captureMax is how much of a command's output Capture keeps: its last
// 8 MiB. The results these tools print come at the end (fio's JSON,
// sysbench's and pgbench's summaries); fio's json+ for a few dozen jobs is
// a few MiB.
const captureMax = 8 << 20

// Capture keeps the end of a command's output, for Parse. It is safe for
// concurrent writes (the command's stdout and stderr).
type Capture struct {
	mu  sync.Mutex
	buf []byte
	// Dropped counts the bytes let go from the front.
	Dropped int64
}

func (c *Capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf = append(c.buf, p...)
	if len(c.buf) > 2*captureMax {
		drop := len(c.buf) - captureMax
		c.Dropped += int64(drop)
		c.buf = append([]byte(nil), c.buf[drop:]...)
	}
	return len(p), nil
}

// Bytes is what was kept.
func (c *Capture) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.buf...)
}

// Known says whether argv runs a program whose result Parse reads
// (Command): perfsleuth then passes its output through a pipe to read it
// (and the program sees a pipe, not a terminal).
func Known(argv []string) bool {
	return Command(argv) != nil
}

// Command is the argv of the program whose result Parse reads that argv
// runs, by the program's name, looking through the wrappers that run a
// command given after their own arguments (env, nice, taskset, timeout,
// sudo, ...) and through a shell's -c script, each of its simple commands
// ("cd /data && fio job.fio"); nil when it runs none.
func Command(argv []string) []string {
	return command(argv, 0)
}

// command is Command, depth wrappers and scripts deep.
func command(argv []string, depth int) []string {
	if len(argv) == 0 || depth > 4 {
		return nil
	}
	name := filepath.Base(argv[0])
	switch {
	case knownTools[name]:
		return argv
	case wrappers[name]:
		// The command is the first argument that names a program this
		// knows, or a shell or wrapper: the wrapper's options and their
		// values ("-n 10", "-c 0-1", "10s", "FOO=bar") name none.
		for i, a := range argv[1:] {
			if b := filepath.Base(a); knownTools[b] || shells[b] || wrappers[b] {
				return command(argv[i+1:], depth+1)
			}
		}
	case shells[name]:
		script, ok := shellScript(argv[1:])
		if !ok {
			return nil
		}
		f, err := syntax.NewParser().Parse(strings.NewReader(script), "")
		if err != nil {
			return nil
		}
		var found []string
		syntax.Walk(f, func(n syntax.Node) bool {
			call, ok := n.(*syntax.CallExpr)
			if !ok || found != nil {
				return found == nil
			}
			var args []string
			for _, w := range call.Args {
				// Quotes removed; a word that needs the environment or a
				// command's output to expand ($VAR, $(...)) is left as
				// its literal parts.
				a, err := expand.Literal(nil, w)
				if err != nil {
					a = w.Lit()
				}
				args = append(args, a)
			}
			found = command(args, depth+1)
			return found == nil
		})
		return found
	}
	return nil
}

// shellScript is the script of a shell's -c option among args (given
// alone, or with other one-letter options: "-ec"), false without one.
func shellScript(args []string) (string, bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--" || !strings.HasPrefix(a, "-"):
			return "", false // a script file, which this does not read
		case strings.HasPrefix(a, "--"):
			continue // --norc, --login
		case a == "-o":
			i++ // -o pipefail
		case strings.ContainsRune(a[1:], 'c') && i+1 < len(args):
			return args[i+1], true
		}
	}
	return "", false
}

var (
	knownTools = map[string]bool{"fio": true, "sysbench": true, "pgbench": true, "redis-benchmark": true, "valkey-benchmark": true}
	shells     = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true}
	wrappers   = map[string]bool{"env": true, "nice": true, "ionice": true, "taskset": true, "numactl": true, "stdbuf": true, "timeout": true,
		"chrt": true, "time": true, "exec": true, "sudo": true, "doas": true, "setsid": true, "nohup": true, "cgexec": true, "runuser": true,
		"unbuffer": true, "systemd-run": true, "prlimit": true, "chpst": true}
)

// Parse reads the result a benchmark printed, trying each format it
// knows; nil when the output holds none.
func Parse(out []byte) *model.ReportedResult {
	text := lines(out)
	for _, p := range []func(string, []byte) *model.ReportedResult{fioJSON, fioNormal, sysbench, pgbench, redis} {
		if r := p(text, out); r != nil && len(r.Metrics) > 0 {
			return r
		}
	}
	return nil
}

// ParseRun is Parse for a run of argv in dir: what it printed, or, for fio
// given --output FILE (which then prints nothing on stdout), that file, as
// far as its first outputMax bytes.
func ParseRun(argv []string, dir string, out []byte) *model.ReportedResult {
	if r := Parse(out); r != nil {
		return r
	}
	f := fioOutputFile(argv)
	if f == "" {
		return nil
	}
	if !filepath.IsAbs(f) {
		f = filepath.Join(dir, f)
	}
	fh, err := os.Open(f)
	if err != nil {
		return nil
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, outputMax))
	if err != nil {
		return nil
	}
	return Parse(b)
}

// outputMax bounds the fio --output file read.
const outputMax = 64 << 20

// fioOutputFile is the file fio's --output names, "" when argv is not fio
// or has none.
func fioOutputFile(argv []string) string {
	argv = Command(argv)
	if len(argv) == 0 || filepath.Base(argv[0]) != "fio" {
		return ""
	}
	for i, a := range argv[1:] {
		switch {
		case strings.HasPrefix(a, "--output="):
			return strings.TrimPrefix(a, "--output=")
		case a == "--output" && i+2 < len(argv):
			return argv[i+2]
		}
	}
	return ""
}

// Metric is the result a --metric regex names: the median of its first
// group over every line it matches (as diagnose takes it), nil when no
// line matched. name says what it is in the views.
func Metric(out []byte, re *regexp.Regexp, lowerIsBetter bool) *model.ReportedResult {
	var vals []float64
	for _, l := range strings.Split(lines(out), "\n") {
		if v, ok := Number(re, l); ok {
			vals = append(vals, v)
		}
	}
	if len(vals) == 0 {
		return nil
	}
	name := "--metric " + re.String()
	if len(vals) > 1 {
		name += " (median of " + strconv.Itoa(len(vals)) + " lines)"
	}
	return &model.ReportedResult{Tool: "metric", Metrics: []model.ReportedMetric{{Name: name, Value: stats.Median(vals), HigherIsBetter: !lowerIsBetter}}}
}

// Number is the number a --metric regex's first group finds in line
// (thousands separators allowed: "1,200" is 1200), false when it finds
// none. diagnose reads its lines as they come with it too.
func Number(re *regexp.Regexp, line string) (float64, bool) {
	m := re.FindStringSubmatch(line)
	if len(m) < 2 {
		return 0, false
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(m[1], ",", ""), 64)
	return v, err == nil
}

// lines is out with \r\n and \r (progress lines redrawn in place) as \n.
func lines(out []byte) string {
	return strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(string(out))
}

// metrics builds a result's list.
type metrics struct{ m []model.ReportedMetric }

func (ms *metrics) add(job, name string, v float64, unit string, higher bool) {
	ms.m = append(ms.m, model.ReportedMetric{Job: job, Name: name, Value: v, Unit: unit, HigherIsBetter: higher})
}

// rate is a throughput (higher is better); latency a time in seconds.
func (ms *metrics) rate(job, name string, v float64, unit string) { ms.add(job, name, v, unit, true) }
func (ms *metrics) latency(job, name string, sec float64)         { ms.add(job, name, sec, "s", false) }

// float parses a number that may carry thousands separators.
func float(s string) (float64, bool) {
	v, err := strconv.ParseFloat(strings.ReplaceAll(strings.TrimSpace(s), ",", ""), 64)
	return v, err == nil
}

// harmonicRate is the rate of the tests taken together, each weighed by
// its requests (equal when unknown): total requests over total time.
func harmonicRate(rates, weights []float64) float64 {
	var req, sec float64
	for i, r := range rates {
		if r <= 0 {
			return 0
		}
		w := 1.0
		if i < len(weights) && weights[i] > 0 {
			w = weights[i]
		}
		req += w
		sec += w / r
	}
	if sec == 0 {
		return 0
	}
	return req / sec
}
