package toolresult

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// fio's JSON (--output-format=json or json+; the two share these fields).
type fioDoc struct {
	Version string   `json:"fio version"`
	Jobs    []fioJob `json:"jobs"`
	// ClientStats is what a fio --client run reports in place of jobs.
	ClientStats []fioJob `json:"client_stats"`
}

type fioJob struct {
	Name  string `json:"jobname"`
	Error int    `json:"error"`
	Read  fioDir `json:"read"`
	Write fioDir `json:"write"`
	Trim  fioDir `json:"trim"`
}

type fioDir struct {
	IOBytes  int64   `json:"io_bytes"`
	BWBytes  float64 `json:"bw_bytes"`
	IOPS     float64 `json:"iops"`
	TotalIOs int64   `json:"total_ios"`
	Clat     fioLat  `json:"clat_ns"`
	Lat      fioLat  `json:"lat_ns"`
}

type fioLat struct {
	N          int64              `json:"N"`
	Mean       float64            `json:"mean"`
	Percentile map[string]float64 `json:"percentile"`
}

// fioPercentiles are the completion-latency percentiles kept, by fio's key.
var fioPercentiles = []struct{ key, name string }{{"50.000000", "p50"}, {"99.000000", "p99"}, {"99.900000", "p99.9"}}

// fioJSON reads fio's JSON document from the output, which may hold other
// lines before it (fio's notes, a normal-format report before a json one).
func fioJSON(_ string, out []byte) *model.ReportedResult {
	at := bytes.Index(out, []byte(`"fio version"`))
	if at < 0 {
		return nil
	}
	start := bytes.LastIndexByte(out[:at], '{')
	if start < 0 {
		return nil
	}
	var doc fioDoc
	if err := json.NewDecoder(bytes.NewReader(out[start:])).Decode(&doc); err != nil {
		return nil
	}
	jobs := doc.Jobs
	if len(jobs) == 0 {
		jobs = doc.ClientStats
	}
	var ms metrics
	var total float64
	var dirs []string
	for _, j := range jobs {
		for _, d := range []struct {
			name string
			dir  fioDir
		}{{"read", j.Read}, {"write", j.Write}, {"trim", j.Trim}} {
			if d.dir.TotalIOs == 0 && d.dir.IOBytes == 0 {
				continue
			}
			total += d.dir.IOPS
			dirs = addDir(dirs, d.name)
			ms.rate(j.Name, d.name+" IOPS", d.dir.IOPS, "ops/s")
			ms.rate(j.Name, d.name+" bandwidth", d.dir.BWBytes, "B/s")
			lat, which := d.dir.Clat, "clat"
			if lat.N == 0 {
				lat, which = d.dir.Lat, "lat"
			}
			if lat.N > 0 {
				ms.latency(j.Name, d.name+" "+which+" mean", lat.Mean/1e9)
				for _, p := range fioPercentiles {
					if v, ok := lat.Percentile[p.key]; ok {
						ms.latency(j.Name, d.name+" "+which+" "+p.name, v/1e9)
					}
				}
			}
		}
	}
	return fioResult("json", total, dirs, len(jobs), ms)
}

// fioResult puts the run's IOPS, every job's and direction's together,
// first: the result of the run.
func fioResult(format string, total float64, dirs []string, jobs int, ms metrics) *model.ReportedResult {
	if len(ms.m) == 0 {
		return nil
	}
	name := strings.Join(dirs, "+") + " IOPS"
	if jobs > 1 {
		name += fmt.Sprintf(" (%d jobs)", jobs)
	}
	head := model.ReportedMetric{Name: name, Value: total, Unit: "ops/s", HigherIsBetter: true}
	return &model.ReportedResult{Tool: "fio", Format: format, Metrics: append([]model.ReportedMetric{head}, ms.m...)}
}

func addDir(dirs []string, d string) []string {
	for _, x := range dirs {
		if x == d {
			return dirs
		}
	}
	return append(dirs, d)
}

// fio's normal output:
//
//	job1: (groupid=0, jobs=1): err= 0: pid=1234: Thu Nov 26 10:00:00 2026
//	  read: IOPS=18.0k, BW=70.4MiB/s (73.8MB/s)(563MiB/8001msec)
//	    clat (usec): min=30, max=2000, avg=54.33, stdev=10.20
//	    clat percentiles (usec):
//	     |  1.00th=[   36],  5.00th=[   38], 10.00th=[   40], 20.00th=[   43],
var (
	fioJobLine  = regexp.MustCompile(`^(\S.*): \(groupid=\d+, jobs=(\d+)\): err=\s*\d+`)
	fioDirLine  = regexp.MustCompile(`^\s+(read|write|trim)\s*: IOPS=([0-9.]+)([kKmM]?), BW=([0-9.]+)([KMGTP]?i?B)/s`)
	fioLatLine  = regexp.MustCompile(`^\s+(clat|lat) \((nsec|usec|msec|sec)\):.*\bavg=\s*([0-9.]+)`)
	fioPctHead  = regexp.MustCompile(`^\s+(clat|lat) percentiles \((nsec|usec|msec|sec)\):`)
	fioPctValue = regexp.MustCompile(`([0-9.]+)th=\[\s*([0-9]+)\]`)
)

var fioTimeUnit = map[string]float64{"nsec": 1e-9, "usec": 1e-6, "msec": 1e-3, "sec": 1}

var fioByteUnit = map[string]float64{"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50,
	"KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "PB": 1e15}

func fioNormal(text string, _ []byte) *model.ReportedResult {
	var ms metrics
	var total float64
	var dirs []string
	job, dir := "", ""
	jobs := 0
	// inPct is the unit of the percentile block being read (0: none);
	// latKind says whether the mean came from clat (preferred) or lat.
	inPct := 0.0
	latKind := map[string]string{}
	for _, l := range strings.Split(text, "\n") {
		if inPct > 0 {
			if strings.HasPrefix(strings.TrimSpace(l), "|") {
				for _, m := range fioPctValue.FindAllStringSubmatch(l, -1) {
					for _, p := range fioPercentiles {
						if v, ok := float(m[1]); ok && fmt.Sprintf("%.6f", v) == p.key {
							x, _ := float(m[2])
							ms.latency(job, dir+" clat "+p.name, x*inPct)
						}
					}
				}
				continue
			}
			inPct = 0
		}
		if m := fioJobLine.FindStringSubmatch(l); m != nil {
			// A block reports one job, or a group of them
			// (group_reporting: jobs=N).
			job, dir = m[1], ""
			n, _ := strconv.Atoi(m[2])
			jobs += max(n, 1)
			continue
		}
		if m := fioDirLine.FindStringSubmatch(l); m != nil && job != "" {
			dir = m[1]
			iops, _ := float(m[2])
			switch m[3] {
			case "k", "K":
				iops *= 1e3
			case "m", "M":
				iops *= 1e6
			}
			bw, _ := float(m[4])
			total += iops
			dirs = addDir(dirs, dir)
			ms.rate(job, dir+" IOPS", iops, "ops/s")
			ms.rate(job, dir+" bandwidth", bw*fioByteUnit[m[5]], "B/s")
			continue
		}
		if dir == "" {
			continue
		}
		if m := fioLatLine.FindStringSubmatch(l); m != nil {
			key := job + "/" + dir
			// clat comes before lat in fio's output: a lat line adds a
			// mean only when there was no clat (e.g. --disable_clat).
			if m[1] == "lat" && latKind[key] == "clat" {
				continue
			}
			latKind[key] = m[1]
			v, _ := float(m[3])
			ms.latency(job, dir+" "+m[1]+" mean", v*fioTimeUnit[m[2]])
			continue
		}
		if m := fioPctHead.FindStringSubmatch(l); m != nil && m[1] == "clat" {
			inPct = fioTimeUnit[m[2]]
		}
	}
	return fioResult("normal", total, dirs, jobs, ms)
}
