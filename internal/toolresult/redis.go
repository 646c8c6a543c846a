package toolresult

import (
	"encoding/csv"
	"fmt"
	"regexp"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// redis-benchmark's three outputs. The summary (Redis 6.2 and later):
//
//	====== SET ======
//	  100000 requests completed in 1.23 seconds
//	...
//	Summary:
//	  throughput summary: 81234.77 requests per second
//	  latency summary (msec):
//	          avg       min       p50       p95       p99       max
//	        0.323     0.088     0.311     0.479     0.599     1.423
//
// (before 6.2 a bare "81234.77 requests per second" line); -q, one line a
// test: "SET: 81234.77 requests per second, p50=0.311 msec" (before 6.2
// without p50), after progress lines redrawn with \r; --csv:
// "test","rps","avg_latency_ms",... then a row a test.
var (
	rbHeader    = regexp.MustCompile(`^====== (.+) ======\s*$`)
	rbCompleted = regexp.MustCompile(`^\s+([0-9]+) requests completed in ([0-9.]+) seconds`)
	rbRate      = regexp.MustCompile(`^\s*(?:throughput summary: )?([0-9.]+) requests per second`)
	rbLatHead   = regexp.MustCompile(`^\s+avg\s+min\s+p50\s+p95\s+p99\s+max\s*$`)
	rbQuiet     = regexp.MustCompile(`^(\S.*?): ([0-9.]+) requests per second(?:, p50=([0-9.]+) msec)?`)
)

// redisTest is one test's figures.
type redisTest struct {
	name     string
	rps      float64
	requests float64
	// lat are the latencies (seconds) by name: average, p50, p95, p99, max.
	lat map[string]float64
}

func redis(text string, _ []byte) *model.ReportedResult {
	var tests []*redisTest
	format := ""
	if t := redisCSV(text); len(t) > 0 {
		tests, format = t, "csv"
	} else {
		var cur *redisTest
		latNext := false
		for _, l := range strings.Split(text, "\n") {
			if m := rbHeader.FindStringSubmatch(l); m != nil {
				cur = &redisTest{name: strings.TrimSpace(m[1]), lat: map[string]float64{}}
				tests = append(tests, cur)
				format = "summary"
				continue
			}
			if m := rbQuiet.FindStringSubmatch(l); m != nil && !strings.Contains(m[1], "throughput summary") {
				t := &redisTest{name: m[1], lat: map[string]float64{}}
				t.rps, _ = float(m[2])
				if m[3] != "" {
					v, _ := float(m[3])
					t.lat["p50"] = v / 1e3
				}
				tests = append(tests, t)
				format = "quiet"
				continue
			}
			if cur == nil {
				continue
			}
			if latNext {
				latNext = false
				f := strings.Fields(l)
				for i, name := range []string{"average", "min", "p50", "p95", "p99", "max"} {
					if i < len(f) {
						if v, ok := float(f[i]); ok {
							cur.lat[name] = v / 1e3
						}
					}
				}
				continue
			}
			if m := rbCompleted.FindStringSubmatch(l); m != nil {
				cur.requests, _ = float(m[1])
				continue
			}
			if m := rbRate.FindStringSubmatch(l); m != nil {
				cur.rps, _ = float(m[1])
				continue
			}
			if rbLatHead.MatchString(l) {
				latNext = true
			}
		}
	}
	var ms metrics
	var rates, weights []float64
	for _, t := range tests {
		if t.rps <= 0 {
			continue
		}
		rates, weights = append(rates, t.rps), append(weights, t.requests)
		ms.rate(t.name, "requests/s", t.rps, "requests/s")
		for _, k := range []string{"average", "p50", "p95", "p99", "max"} {
			if v, ok := t.lat[k]; ok {
				ms.latency(t.name, "latency "+k, v)
			}
		}
	}
	if len(rates) == 0 {
		return nil
	}
	r := &model.ReportedResult{Tool: "redis-benchmark", Format: format, Metrics: ms.m}
	if len(rates) > 1 {
		// One figure for the run: its requests over its time, the tests
		// taken one after the other (each weighs by its requests).
		head := model.ReportedMetric{Name: fmt.Sprintf("requests/s over %d tests", len(rates)), Value: harmonicRate(rates, weights), Unit: "requests/s", HigherIsBetter: true}
		r.Metrics = append([]model.ReportedMetric{head}, r.Metrics...)
	}
	return r
}

// redisCSV reads --csv output: a header naming "test" and "rps", then a
// row a test.
func redisCSV(text string) []*redisTest {
	start := strings.Index(text, `"test","rps"`)
	if start < 0 {
		return redisCSVBare(text)
	}
	rd := csv.NewReader(strings.NewReader(text[start:]))
	rd.FieldsPerRecord = -1
	rd.LazyQuotes = true
	head, err := rd.Read()
	if err != nil {
		return nil
	}
	col := map[string]int{}
	for i, h := range head {
		col[h] = i
	}
	var tests []*redisTest
	for {
		row, err := rd.Read()
		if err != nil || len(row) < 2 {
			break
		}
		t := &redisTest{name: row[0], lat: map[string]float64{}}
		var ok bool
		if t.rps, ok = float(row[col["rps"]]); !ok {
			break
		}
		for name, h := range map[string]string{"average": "avg_latency_ms", "min": "min_latency_ms", "p50": "p50_latency_ms", "p95": "p95_latency_ms", "p99": "p99_latency_ms", "max": "max_latency_ms"} {
			if i, found := col[h]; found && i < len(row) {
				if v, ok := float(row[i]); ok {
					t.lat[name] = v / 1e3
				}
			}
		}
		tests = append(tests, t)
	}
	return tests
}

// rbBareCSV is a row of redis-benchmark --csv before 6.2: no header, the
// test and its requests per second.
var rbBareCSV = regexp.MustCompile(`^"([^"]+)","([0-9.]+)"\s*$`)

func redisCSVBare(text string) []*redisTest {
	var tests []*redisTest
	for _, l := range strings.Split(text, "\n") {
		if m := rbBareCSV.FindStringSubmatch(l); m != nil {
			t := &redisTest{name: m[1], lat: map[string]float64{}}
			t.rps, _ = float(m[2])
			tests = append(tests, t)
		}
	}
	return tests
}
