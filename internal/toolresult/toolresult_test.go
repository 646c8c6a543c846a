package toolresult

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// The samples in testdata are the tools' own output: copied from the
// public sources SOURCES.md names, and made on this machine (fio-json-*,
// fio-jsonplus-*, fio-normal-read, sysbench-fileio-*): the figures below
// are read off those files (by eye, and with jq for fio's JSON).
func TestParseSamples(t *testing.T) {
	type fig struct {
		job, name string
		value     float64
	}
	cases := []struct {
		file, tool, format string
		primary            fig
		higher             bool
		others             []fig
		count              int // figures in all, 0: not checked
	}{
		{file: "fio-normal-randrw.txt", tool: "fio", format: "normal", higher: true,
			primary: fig{"", "read+write IOPS (4 jobs)", 3528 + 3531},
			others: []fig{{"mixed_randrw", "read IOPS", 3528}, {"mixed_randrw", "write IOPS", 3531},
				{"mixed_randrw", "read bandwidth", 13.8 * (1 << 20)},
				{"mixed_randrw", "read clat mean", 535.71e-6}, {"mixed_randrw", "read clat p50", 494e-6},
				{"mixed_randrw", "read clat p99", 1450e-6}, {"mixed_randrw", "read clat p99.9", 5604e-6},
				{"mixed_randrw", "write clat mean", 588.18e-6}, {"mixed_randrw", "write clat p99.9", 6128e-6}},
			count: 1 + 2*6},
		{file: "fio-normal-randrw-msec.txt", tool: "fio", format: "normal", higher: true,
			primary: fig{"", "read+write IOPS (30 jobs)", 3042 + 3055},
			others: []fig{{"sap", "read clat mean", 137158.98e-6}, {"sap", "read clat p50", 112e-3},
				{"sap", "write clat mean", 167.82e-3}, {"sap", "write clat p99", 1250e-3}}},
		// fio 3.33 on this machine: two jobs of randrw in JSON, a json+
		// randwrite, a normal-format O_DIRECT read ("IOPS=13.4k").
		{file: "fio-json-randrw-2jobs.txt", tool: "fio", format: "json", higher: true,
			primary: fig{"", "read+write IOPS (2 jobs)", 63756.243756},
			others: []fig{{"randrw", "read IOPS", 15975.024975}, {"randrw", "read bandwidth", 65433702},
				{"randrw", "read clat mean", 48990.644613e-9}, {"randrw", "read clat p50", 38144e-9}, {"randrw", "read clat p99", 189440e-9},
				{"randrw", "write IOPS", 15928.071928}, {"randrw", "write clat p99.9", 90624e-9}},
			count: 1 + 2*2*6},
		{file: "fio-jsonplus-randwrite.txt", tool: "fio", format: "json", higher: true,
			primary: fig{"", "write IOPS", 284102.897103},
			others:  []fig{{"w", "write bandwidth", 1163685466}, {"w", "write clat mean", 2459.313678e-9}, {"w", "write clat p99", 4320e-9}},
			count:   1 + 6},
		{file: "fio-normal-read.txt", tool: "fio", format: "normal", higher: true,
			primary: fig{"", "read IOPS", 13400},
			others:  []fig{{"seqread", "read bandwidth", 52.3 * (1 << 20)}, {"seqread", "read clat mean", 72.84e-6}, {"seqread", "read clat p99", 174e-6}}},
		// sysbench fileio: reads and writes per second, as perfsleuth's
		// fileio counts (its events count the fsyncs too).
		{file: "sysbench-fileio-rndwr.txt", tool: "sysbench", higher: true,
			primary: fig{"", "writes/s", 43834.50},
			others:  []fig{{"", "fsyncs/s", 1756.93}, {"", "written bandwidth", 684.91 * (1 << 20)}, {"", "latency 95th percentile", 0.01e-3}}},
		{file: "sysbench-oltp.txt", tool: "sysbench", higher: true,
			primary: fig{"", "transactions/s", 267.53},
			others:  []fig{{"", "queries/s", 5350.63}, {"", "latency average", 22.41e-3}, {"", "latency 95th percentile", 29.19e-3}, {"", "latency max", 108.98e-3}}},
		{file: "sysbench-oltp-1.0.12-with-progress.txt", tool: "sysbench", higher: true,
			primary: fig{"", "transactions/s", 986.49},
			others:  []fig{{"", "latency 100th percentile", 116.80e-3}}},
		{file: "sysbench-cpu.txt", tool: "sysbench", higher: true,
			primary: fig{"", "events/s", 4343.94},
			others:  []fig{{"", "latency average", 1.84e-3}}},
		{file: "pgbench-r-15.txt", tool: "pgbench", higher: true,
			primary: fig{"", "tps", 2543.571797},
			others: []fig{{"", "latency average", 19.657e-3}, {"BEGIN;", "statement latency", 0.744e-3},
				{"UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;", "statement latency", 3.779e-3},
				{"END;", "statement latency", 11.716e-3}},
			count: 1 + 1 + 11},
		{file: "pgbench-r-14-select-only.txt", tool: "pgbench", higher: true,
			primary: fig{"", "tps", 1221.977158},
			others:  []fig{{"SELECT abalance FROM pgbench_accounts WHERE aid = :aid;", "statement latency", 41.047e-3}}},
		// Before 14: the tps without connection set-up, whichever line
		// comes first.
		{file: "pgbench-old.txt", tool: "pgbench", higher: true,
			primary: fig{"", "tps", 82.006115},
			others:  []fig{{"", "latency average", 606.825e-3}, {"", "latency stddev", 608.772e-3}}},
		{file: "pgbench-old-9.x-tabs.stdout.txt", tool: "pgbench", higher: true,
			primary: fig{"", "tps", 13.062579},
			others:  []fig{{"", "latency average", 1108.418e-3}, {"BEGIN;", "statement latency", 36.290649e-3}}},
		{file: "redis-default.txt", tool: "redis-benchmark", format: "summary", higher: true,
			// 100,000 requests each: 200,000 over 100,000/155,521 +
			// 100,000/170,940.17 seconds.
			primary: fig{"", "requests/s over 2 tests", 162866.45},
			others: []fig{{"SET", "requests/s", 155521}, {"GET", "requests/s", 170940.17},
				{"SET", "latency average", 0.184e-3}, {"SET", "latency p99", 1.023e-3}, {"SET", "latency max", 2.191e-3}}},
		{file: "redis-q.txt", tool: "redis-benchmark", format: "quiet", higher: true,
			primary: fig{"", "requests/s over 20 tests", 59970.03},
			others: []fig{{"SET", "requests/s", 158478.61}, {"SET", "latency p50", 1.535e-3},
				{"LPUSH (needed to benchmark LRANGE)", "requests/s", 172117.05}, {"MSET (10 keys)", "requests/s", 88417.33}}},
		{file: "redis-q-old.txt", tool: "redis-benchmark", format: "quiet", higher: true,
			primary: fig{"", "requests/s over 4 tests", 1138790.03},
			others:  []fig{{"GET", "requests/s", 970402.69}}},
		{file: "redis-csv.txt", tool: "redis-benchmark", format: "csv", higher: true,
			primary: fig{"", "requests/s over 20 tests", 68331.69},
			others:  []fig{{"PING_INLINE", "requests/s", 160771.70}, {"PING_INLINE", "latency p99", 0.535e-3}}},
		{file: "redis-csv-old-6.0.txt", tool: "redis-benchmark", format: "csv", higher: true,
			primary: fig{"", "requests/s over 20 tests", 59778.23}},
		{file: "redis-csv-with-warning-6.2.4.txt", tool: "redis-benchmark", format: "csv", higher: true,
			primary: fig{"JSON.GET jsonsl-1 .", "requests/s", 19920.32},
			others:  []fig{{"JSON.GET jsonsl-1 .", "latency average", 0.183e-3}}},
	}
	near := func(got, want float64) bool { return math.Abs(got-want) <= 1e-6*math.Abs(want)+1e-12 }
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			out, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			r := Parse(out)
			if r == nil {
				t.Fatalf("no result read")
			}
			if r.Tool != c.tool || r.Format != c.format {
				t.Errorf("tool %q format %q, want %q %q", r.Tool, r.Format, c.tool, c.format)
			}
			p, ok := r.PrimaryMetric()
			if !ok || p.Job != c.primary.job || p.Name != c.primary.name || !near(p.Value, c.primary.value) || p.HigherIsBetter != c.higher {
				t.Errorf("primary %+v, want %+v (higher is better: %v)", p, c.primary, c.higher)
			}
			for _, o := range c.others {
				if got, ok := lookup(r, o.job, o.name); !ok || !near(got.Value, o.value) {
					t.Errorf("%s / %s: %+v (found %v), want %v", o.job, o.name, got, ok, o.value)
				}
			}
			if c.count > 0 && len(r.Metrics) != c.count {
				t.Errorf("%d figures, want %d: %+v", len(r.Metrics), c.count, r.Metrics)
			}
			for _, m := range r.Metrics {
				if m.Unit == "s" && m.HigherIsBetter || m.Unit != "s" && !m.HigherIsBetter {
					t.Errorf("%s / %s: unit %s with higher-is-better %v", m.Job, m.Name, m.Unit, m.HigherIsBetter)
				}
			}
		})
	}
}

func lookup(r *model.ReportedResult, job, name string) (model.ReportedMetric, bool) {
	for _, m := range r.Metrics {
		if m.Job == job && m.Name == name {
			return m, true
		}
	}
	return model.ReportedMetric{}, false
}

// Output with no result in it reads as none: not a zero.
func TestParseNothing(t *testing.T) {
	for _, out := range []string{"", "hello\n", "tps = \n", `{"fio version": "fio-3.33", "jobs": []}`,
		"sysbench 1.0.20\nGeneral statistics:\n", "====== SET ======\n  100000 requests completed in 0.64 seconds\n"} {
		if r := Parse([]byte(out)); r != nil {
			t.Errorf("%q: read %+v, want nothing", out, r)
		}
	}
}

// redis-benchmark's progress lines are redrawn with \r: only the final
// line of each test counts.
func TestRedisProgressLines(t *testing.T) {
	out := "SET: rps=0.0 (overall: -nan) avg_msec=-nan (overall: -nan)\r" +
		"SET: rps=81234.0 (overall: 80000.0) avg_msec=0.300 (overall: 0.310)\r" +
		"                                                          \r" +
		"SET: 81234.77 requests per second, p50=0.311 msec\n"
	r := Parse([]byte(out))
	if r == nil || len(r.Metrics) != 2 || r.Metrics[0].Value != 81234.77 {
		t.Fatalf("read %+v, want SET at 81,234.77 requests/s and its p50", r)
	}
}

func TestMetric(t *testing.T) {
	out := []byte("run 1 score: 10\nrun 2 score: 1,200\r\nrun 3 score: 30\nscore: none\n")
	r := Metric(out, regexp.MustCompile(`score: ([0-9,.]+)`), false)
	if p, ok := r.PrimaryMetric(); !ok || p.Value != 30 || !p.HigherIsBetter || !strings.Contains(p.Name, "median of 3 lines") {
		t.Errorf("got %+v, want the median 30 of 3 lines, higher is better", r)
	}
	if r := Metric(out, regexp.MustCompile(`elapsed: ([0-9.]+)`), true); r != nil {
		t.Errorf("no line matched, got %+v", r)
	}
	if r := Metric([]byte("elapsed: 1.5\n"), regexp.MustCompile(`elapsed: ([0-9.]+)`), true); r == nil || r.Metrics[0].HigherIsBetter {
		t.Errorf("--metric-lower: %+v", r)
	}
}

// Capture keeps the end of a long output, within its bound.
func TestCaptureBound(t *testing.T) {
	var c Capture
	line := bytes.Repeat([]byte("x"), 1<<20)
	for range 40 {
		c.Write(line)
	}
	c.Write([]byte("tps = 12.5 (without initial connection time)\n"))
	got := c.Bytes()
	if len(got) > 2*captureMax || !bytes.HasSuffix(got, []byte("connection time)\n")) || c.Dropped == 0 {
		t.Errorf("kept %d bytes (bound %d), dropped %d, end %q", len(got), 2*captureMax, c.Dropped, got[len(got)-20:])
	}
}

func TestKnown(t *testing.T) {
	for argv, want := range map[string]bool{"fio": true, "/usr/bin/fio": true, "sysbench": true, "pgbench": true,
		"redis-benchmark": true, "sh": false, "fio.sh": false, "": false} {
		if got := Known(strings.Fields(argv)); got != want {
			t.Errorf("Known(%q) = %v", argv, got)
		}
	}
}

// A benchmark run through a shell's -c script or a wrapper is found, with
// its own argv; a program that only names one in its arguments is not.
func TestCommand(t *testing.T) {
	for _, c := range []struct {
		argv []string
		want string
	}{
		{[]string{"sh", "-c", "fio --name=x --output=out.json"}, "fio --name=x --output=out.json"},
		{[]string{"bash", "-ec", "cd /tmp && exec fio 'job file.fio'"}, "fio job file.fio"},
		{[]string{"/bin/bash", "-o", "pipefail", "-c", `sysbench fileio --file-test-mode="seqwr" run | tee log`}, "sysbench fileio --file-test-mode=seqwr run"},
		{[]string{"env", "PGHOST=/tmp", "nice", "-n", "5", "pgbench", "-c", "8"}, "pgbench -c 8"},
		{[]string{"taskset", "-c", "0-1", "sh", "-c", "redis-benchmark -q"}, "redis-benchmark -q"},
		{[]string{"timeout", "10s", "/usr/bin/fio", "j.fio"}, "/usr/bin/fio j.fio"},
		{[]string{"sh", "-c", "for i in 1 2; do fio --name=$i; done"}, "fio --name="},
		{[]string{"sh", "script.sh"}, ""},
		{[]string{"sh", "-c", "echo fio"}, ""},
		{[]string{"grep", "fio", "log"}, ""},
		{[]string{"sh", "-c", "fio 'unterminated"}, ""},
		{[]string{"env"}, ""},
	} {
		if got := strings.Join(Command(c.argv), " "); got != c.want {
			t.Errorf("Command(%q) = %q, want %q", c.argv, got, c.want)
		}
	}
}

// fio --output FILE prints nothing on stdout: its result is read from the
// file, relative to the command's directory.
func TestParseRunFioOutputFile(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join("testdata", "fio-json-randrw-2jobs.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "out.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, argv := range [][]string{{"fio", "--name=x", "--output=out.json"}, {"/usr/bin/fio", "--output", "out.json", "--name=x"},
		{"sh", "-c", "fio --output=out.json --name=x"}} {
		r := ParseRun(argv, dir, nil)
		if p, ok := r.PrimaryMetric(); !ok || math.Abs(p.Value-63756.243756) > 1e-3 {
			t.Errorf("%v: %+v, want the file's 63,756 IOPS", argv, r)
		}
	}
	for _, argv := range [][]string{{"fio", "--name=x"}, {"fio", "--output=missing.json"}, {"sysbench", "--output=out.json"}} {
		if r := ParseRun(argv, dir, nil); r != nil {
			t.Errorf("%v: read %+v, want nothing", argv, r)
		}
	}
}
