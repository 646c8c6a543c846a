package toolresult

import (
	"regexp"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// sysbench 1.0's report (fileio, cpu, memory, threads, mutex, OLTP):
//
//	File operations:
//	    reads/s:                      0.00
//	    writes/s:                     5179.77
//	    fsyncs/s:                     6635.90
//	...
//	    transactions:                        12345  (1234.21 per sec.)
//	    queries:                             246900 (24684.20 per sec.)
//	...
//	General statistics:
//	    total time:                          10.0031s
//	    total number of events:              118081
//	Latency (ms):
//	         avg:                                    0.08
//	         95th percentile:                        0.20
var (
	sbHeader  = regexp.MustCompile(`(?m)^sysbench [0-9]`)
	sbPerSec  = regexp.MustCompile(`^\s+(reads|writes|fsyncs)/s:\s+([0-9.]+)`)
	sbMiB     = regexp.MustCompile(`^\s+(read|written), MiB/s:\s+([0-9.]+)`)
	sbCounted = regexp.MustCompile(`^\s+(transactions|queries|ignored errors|reconnects):\s+\d+\s+\(([0-9.]+) per sec\.\)`)
	sbEvents  = regexp.MustCompile(`^\s+events per second:\s+([0-9.]+)`)
	sbTotal   = regexp.MustCompile(`^\s+total time:\s+([0-9.]+)s`)
	sbNEvents = regexp.MustCompile(`^\s+total number of events:\s+([0-9]+)`)
	sbLatency = regexp.MustCompile(`^\s+(min|avg|max|(\d+)th percentile):\s+([0-9.]+)`)
)

func sysbench(text string, _ []byte) *model.ReportedResult {
	if !sbHeader.MatchString(text) || !strings.Contains(text, "General statistics:") {
		return nil
	}
	var ms metrics
	perSec := map[string]float64{}
	var total, nEvents float64
	haveTPS, haveEvents, inLatency := false, false, false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "Latency (ms):") {
			inLatency = true
			continue
		}
		if inLatency {
			if m := sbLatency.FindStringSubmatch(l); m != nil {
				v, _ := float(m[3])
				name := "latency " + m[1]
				if m[1] == "avg" {
					name = "latency average"
				}
				ms.latency("", name, v/1e3)
				continue
			}
			if strings.TrimSpace(l) != "" && !strings.HasPrefix(l, " ") {
				inLatency = false
			}
			continue
		}
		if m := sbPerSec.FindStringSubmatch(l); m != nil {
			v, _ := float(m[2])
			perSec[m[1]] = v
			ms.rate("", m[1]+"/s", v, "ops/s")
			continue
		}
		if m := sbMiB.FindStringSubmatch(l); m != nil {
			v, _ := float(m[2])
			ms.rate("", m[1]+" bandwidth", v*(1<<20), "B/s")
			continue
		}
		if m := sbCounted.FindStringSubmatch(l); m != nil {
			v, _ := float(m[2])
			switch m[1] {
			case "transactions":
				haveTPS = true
				ms.rate("", "transactions/s", v, "tx/s")
			case "queries":
				ms.rate("", "queries/s", v, "queries/s")
			}
			continue
		}
		if m := sbEvents.FindStringSubmatch(l); m != nil {
			haveEvents = true
			v, _ := float(m[1])
			ms.rate("", "events/s", v, "events/s")
			continue
		}
		if m := sbTotal.FindStringSubmatch(l); m != nil {
			total, _ = float(m[1])
			continue
		}
		if m := sbNEvents.FindStringSubmatch(l); m != nil {
			nEvents, _ = float(m[1])
		}
	}
	// The result: the OLTP tests' transactions/s; the cpu test's
	// events/s; fileio's reads and writes per second (its events count
	// fsyncs too), as perfsleuth's own fileio counts them; otherwise
	// events over the total time.
	r := &model.ReportedResult{Tool: "sysbench", Metrics: ms.m}
	primary := -1
	switch {
	case haveTPS:
		primary = find(ms.m, "transactions/s")
	case haveEvents:
		primary = find(ms.m, "events/s")
	case perSec["reads"]+perSec["writes"] > 0:
		name := "reads+writes/s"
		switch {
		case perSec["reads"] == 0:
			name = "writes/s"
		case perSec["writes"] == 0:
			name = "reads/s"
		}
		if name != "reads+writes/s" {
			primary = find(ms.m, name)
			break
		}
		r.Metrics = append([]model.ReportedMetric{{Name: name, Value: perSec["reads"] + perSec["writes"], Unit: "ops/s", HigherIsBetter: true}}, r.Metrics...)
		primary = 0
	case total > 0 && nEvents > 0:
		r.Metrics = append([]model.ReportedMetric{{Name: "events/s", Value: nEvents / total, Unit: "events/s", HigherIsBetter: true}}, r.Metrics...)
		primary = 0
	}
	if primary < 0 {
		return nil
	}
	r.Primary = primary
	return r
}

// find is the index of the whole-run metric named name, -1 when absent.
func find(ms []model.ReportedMetric, name string) int {
	for i, m := range ms {
		if m.Name == name && m.Job == "" {
			return i
		}
	}
	return -1
}
