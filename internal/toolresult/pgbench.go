package toolresult

import (
	"regexp"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// pgbench's report:
//
//	number of transactions actually processed: 12345
//	latency average = 6.481 ms
//	latency stddev = 2.100 ms
//	initial connection time = 12.345 ms
//	tps = 1234.567890 (without initial connection time)
//	statement latencies in milliseconds and failures:
//	         0.002           0  \set aid random(1, 100000 * :scale)
//	         0.150           0  BEGIN;
//
// (before PostgreSQL 14: "tps = N (including connections establishing)"
// and "tps = N (excluding connections establishing)"; before 15 the
// statement lines have no failures column).
var (
	pgTPS       = regexp.MustCompile(`^tps = ([0-9.]+)(?: \((.*)\))?`)
	pgLatency   = regexp.MustCompile(`^latency (average|stddev)\s*[=:]\s*([0-9.]+) ms`)
	pgStmtsHead = regexp.MustCompile(`^\s*statement latencies in milliseconds`)
	pgStmt      = regexp.MustCompile(`^\s+([0-9.]+)\s+(?:[0-9]+\s+)?(\S.*)$`)
	pgScript    = regexp.MustCompile(`^SQL script \d+: (.*)`)
)

func pgbench(text string, _ []byte) *model.ReportedResult {
	if !strings.Contains(text, "transaction type:") || !strings.Contains(text, "tps = ") {
		return nil
	}
	var ms metrics
	tps, tpsAt := -1.0, -1
	inStmts := false
	script := ""
	for _, l := range strings.Split(text, "\n") {
		if inStmts {
			if m := pgStmt.FindStringSubmatch(l); m != nil {
				v, _ := float(m[1])
				job := strings.TrimSpace(m[2])
				if script != "" {
					job = script + ": " + job
				}
				ms.latency(job, "statement latency", v/1e3)
				continue
			}
			inStmts = false
		}
		if m := pgScript.FindStringSubmatch(l); m != nil {
			script = strings.TrimSpace(m[1])
			continue
		}
		if pgStmtsHead.MatchString(l) {
			inStmts = true
			continue
		}
		if m := pgLatency.FindStringSubmatch(l); m != nil {
			v, _ := float(m[2])
			ms.latency("", "latency "+m[1], v/1e3)
			continue
		}
		if m := pgTPS.FindStringSubmatch(l); m != nil {
			v, _ := float(m[1])
			// The figure without connection set-up: "without initial
			// connection time" (14 and later), "excluding connections
			// establishing" (before); the one line of other versions.
			including := strings.Contains(m[2], "including")
			if including && tps >= 0 {
				continue
			}
			if tps >= 0 && !including {
				ms.m[tpsAt].Value = v
				tps = v
				continue
			}
			tps, tpsAt = v, len(ms.m)
			ms.rate("", "tps", v, "tx/s")
		}
	}
	if tps < 0 {
		return nil
	}
	return &model.ReportedResult{Tool: "pgbench", Metrics: ms.m, Primary: tpsAt}
}
