// Command fio compares perfsleuth's fileio benchmark with fio on the same
// jobs, on the same file in the same directory:
//
//	randread-4k-cached   4 KiB random reads, buffered, from the page cache
//	randwrite-4k         4 KiB random writes, buffered, no fsync
//	seqwrite-1m-direct   1 MiB sequential writes, O_DIRECT
//	randread-4k-direct-qd1   4 KiB O_DIRECT random reads, io_uring, 1 in flight
//	randread-4k-direct-qd16  the same, 16 in flight
//	randread-4k-direct-aio16 the same with libaio
//
// (psync for the first three, the engine named for the others, in both
// tools.)
//
// Runs alternate perfsleuth, fio, perfsleuth, fio, ... so that drift on a
// shared machine hits both alike. Every job first runs one untimed warm-up of
// each tool: for cached reads that fills the page cache, for buffered writes
// it leaves the cache dirty the way every measured run finds it. For each job it prints every repeat's IOPS, the
// medians and the median of the per-pair ratios perfsleuth/fio, with PASS
// when that is at least 0.95. It exits 1 when a job fails.
//
// The file is laid out once by perfsleuth (--keep) and fio is pointed at it
// with the same size. fio runs with --invalidate=0 (its default drops the
// file's page cache before every job, which would make "cached reads" disk
// reads and give the two tools different cache states) and --norandommap
// (perfsleuth draws offsets independently; fio's default random map visits
// each block once per pass and costs fio time).
//
//	go run ./benchmarks/fio                      # builds ./cmd/perfsleuth
//	go run ./benchmarks/fio --perfsleuth ./perfsleuth --repeats 3
//	go run ./benchmarks/fio --in-process         # the fileio package, no CLI
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/perfsleuth/perfsleuth/internal/stats"
	"github.com/perfsleuth/perfsleuth/internal/units"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/workload/fileio"
)

// passRatio is the target: perfsleuth must reach 95% of fio's IOPS, so that
// its own overhead cannot be what a user measures.
const passRatio = 0.95

type job struct {
	name   string
	rw     string
	bs     int64
	direct bool
	fioRW  string
	engine string // "": psync
	depth  int    // 0: 1
}

var jobs = []job{
	{name: "randread-4k-cached", rw: "randread", bs: 4096, fioRW: "randread"},
	{name: "randwrite-4k", rw: "randwrite", bs: 4096, fioRW: "randwrite"},
	{name: "seqwrite-1m-direct", rw: "write", bs: 1 << 20, direct: true, fioRW: "write"},
	{name: "randread-4k-direct-qd1", rw: "randread", bs: 4096, direct: true, fioRW: "randread", engine: "io_uring", depth: 1},
	{name: "randread-4k-direct-qd16", rw: "randread", bs: 4096, direct: true, fioRW: "randread", engine: "io_uring", depth: 16},
	{name: "randread-4k-direct-aio16", rw: "randread", bs: 4096, direct: true, fioRW: "randread", engine: "libaio", depth: 16},
}

// engine is the job's engine as both tools name it.
func (j job) engineName() string {
	if j.engine == "" {
		return "psync"
	}
	return j.engine
}

type options struct {
	perfsleuth string
	fio        string
	inProcess  bool
	repeats    int
	duration   time.Duration
	warmup     time.Duration
	size       int64
	dir        string
	only       string
}

func main() {
	var o options
	var size string
	flag.StringVar(&o.perfsleuth, "perfsleuth", "", "perfsleuth binary (default: go build ./cmd/perfsleuth into a temporary dir)")
	flag.StringVar(&o.fio, "fio", "fio", "fio binary")
	flag.BoolVar(&o.inProcess, "in-process", false, "run the fileio package in this process instead of the perfsleuth CLI")
	flag.IntVar(&o.repeats, "repeats", 5, "measured runs of each tool per job")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "length of each run")
	flag.DurationVar(&o.warmup, "warmup", 5*time.Second, "length of the untimed warm-up runs")
	flag.StringVar(&size, "size", "1GiB", "file size")
	flag.StringVar(&o.dir, "dir", ".", "where to create the work directory (on the disk to measure; removed at the end)")
	flag.StringVar(&o.only, "jobs", "", "comma-separated job names to run (default all)")
	flag.Parse()
	var err error
	if o.size, err = units.ParseSize(size); err != nil {
		fmt.Fprintf(os.Stderr, "--size %s: %v\n", size, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	failed, err := run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) (failed bool, err error) {
	if o.repeats < 1 {
		return false, errors.New("--repeats must be at least 1")
	}
	fioPath, err := exec.LookPath(o.fio)
	if err != nil {
		return false, fmt.Errorf("fio not found (%v): install it (apt-get install fio) or pass --fio", err)
	}
	work, err := os.MkdirTemp(o.dir, "perfsleuth-fio-bench-")
	if err != nil {
		return false, fmt.Errorf("create the work directory under %s: %w", o.dir, err)
	}
	if work, err = filepath.Abs(work); err != nil {
		return false, err
	}
	defer os.RemoveAll(work)
	// perfsleuth refuses a --dir holding files it did not create, so its
	// records and the built binary live beside the data directory.
	data, out := filepath.Join(work, "data"), filepath.Join(work, "out")
	for _, d := range []string{data, out} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return false, err
		}
	}
	if !o.inProcess && o.perfsleuth == "" {
		o.perfsleuth = filepath.Join(work, "perfsleuth")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", o.perfsleuth, "./cmd/perfsleuth")
		if b, err := cmd.CombinedOutput(); err != nil {
			return false, fmt.Errorf("go build ./cmd/perfsleuth: %v\n%s\nrun from the repository root, pass --perfsleuth PATH, or use --in-process", err, b)
		}
	}
	ver, _ := exec.CommandContext(ctx, fioPath, "--version").Output()
	engine := o.perfsleuth
	if o.inProcess {
		engine = "fileio package, in process"
	}
	fmt.Printf("perfsleuth: %s\nfio: %s (%s)\nwork directory: %s\n%d repeats of %v per tool and job, file %s\n",
		engine, fioPath, strings.TrimSpace(string(ver)), work, o.repeats, o.duration, units.FormatSize(o.size))

	for _, j := range jobs {
		if o.only != "" && !slices.Contains(strings.Split(o.only, ","), j.name) {
			continue
		}
		pass, err := runJob(ctx, o, fioPath, data, out, j)
		if err != nil {
			return failed, fmt.Errorf("job %s: %w", j.name, err)
		}
		failed = failed || !pass
	}
	// The kept file goes with the work directory (deferred RemoveAll).
	return failed, nil
}

func runJob(ctx context.Context, o options, fioPath, data, out string, j job) (bool, error) {
	fmt.Printf("\n== %s: rw=%s bs=%d direct=%v\n", j.name, j.rw, j.bs, j.direct)
	file := filepath.Join(data, "perfsleuth-fileio.0")
	ps := func(d time.Duration, i int) (float64, error) {
		return runPerfsleuth(ctx, o, data, filepath.Join(out, fmt.Sprintf("%s-%d.json", j.name, i)), j, d)
	}
	fi := func(d time.Duration) (float64, error) { return runFio(ctx, fioPath, file, o.size, j, d) }

	// perfsleuth's warm-up lays the file out (untimed prepare) if an earlier
	// job has not, so fio finds it in place.
	if _, err := ps(o.warmup, -1); err != nil {
		return false, err
	}
	if _, err := fi(o.warmup); err != nil {
		return false, err
	}
	var a, b, ratios []float64
	fmt.Printf("  %-7s %14s %14s %8s\n", "repeat", "perfsleuth", "fio", "ratio")
	for i := range o.repeats {
		x, err := ps(o.duration, i)
		if err != nil {
			return false, err
		}
		y, err := fi(o.duration)
		if err != nil {
			return false, err
		}
		a, b, ratios = append(a, x), append(b, y), append(ratios, x/y)
		fmt.Printf("  %-7d %14.0f %14.0f %8.3f\n", i+1, x, y, x/y)
	}
	r := stats.Median(ratios)
	verdict := "PASS"
	if r < passRatio {
		verdict = "FAIL"
	}
	fmt.Printf("  %-7s %14.0f %14.0f %8.3f  %s (perfsleuth/fio >= %.2f)\n", "median", stats.Median(a), stats.Median(b), r, verdict, passRatio)
	return r >= passRatio, nil
}

// runPerfsleuth runs one perfsleuth job and returns its reads+writes per second.
func runPerfsleuth(ctx context.Context, o options, data, jsonOut string, j job, d time.Duration) (float64, error) {
	if o.inProcess {
		return runInProcess(ctx, o, data, j, d)
	}
	args := []string{"bench", "fileio", "--rw", j.rw, "--bs", strconv.FormatInt(j.bs, 10),
		"--size", strconv.FormatInt(o.size, 10), "--files", "1", "--threads", "1", "--duration", d.String(),
		"--dir", data, "--keep", "--json", jsonOut}
	if j.direct {
		args = append(args, "--direct")
	}
	args = append(args, "--ioengine", j.engineName(), "--iodepth", strconv.Itoa(max(j.depth, 1)))
	cmd := exec.CommandContext(ctx, o.perfsleuth, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%s %s: %v\n%s", o.perfsleuth, strings.Join(args, " "), err, stderr.Bytes())
	}
	run, err := model.Load(jsonOut)
	if err != nil {
		return 0, err
	}
	if run.Result == nil || run.Result.FileIO == nil {
		return 0, fmt.Errorf("%s has no fileio result", jsonOut)
	}
	return iops(run.Result.FileIO.Ops), nil
}

func runInProcess(ctx context.Context, o options, data string, j job, d time.Duration) (float64, error) {
	cfg := fileio.Defaults()
	cfg.RW, cfg.BS, cfg.Size, cfg.Direct, cfg.Dir, cfg.Keep = j.rw, j.bs, o.size, j.direct, data, true
	cfg.IOEngine, cfg.IODepth = j.engineName(), max(j.depth, 1)
	cfg.DurationSec = d.Seconds()
	f, err := fileio.New(cfg)
	if err != nil {
		return 0, err
	}
	defer f.Cleanup()
	if err := f.Prepare(ctx); err != nil {
		return 0, err
	}
	res, err := f.Run(ctx, nil)
	if err != nil {
		return 0, err
	}
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	return iops(res.FileIO.Ops), nil
}

// iops is reads plus writes per second (syncs are not IOPS).
func iops(ops []model.OpStats) float64 {
	var n float64
	for _, s := range ops {
		if s.Op == "read" || s.Op == "write" {
			n += s.OpsPerSec
		}
	}
	return n
}

// runFio runs fio with the job's engine on file and returns read+write IOPS.
func runFio(ctx context.Context, fioPath, file string, size int64, j job, d time.Duration) (float64, error) {
	args := []string{"--name=" + j.name, "--filename=" + file, "--size=" + strconv.FormatInt(size, 10),
		"--rw=" + j.fioRW, "--bs=" + strconv.FormatInt(j.bs, 10), "--ioengine=" + j.engineName(), "--iodepth=" + strconv.Itoa(max(j.depth, 1)), "--numjobs=1",
		"--time_based", "--runtime=" + strconv.FormatFloat(d.Seconds(), 'f', -1, 64),
		"--invalidate=0", "--norandommap", "--output-format=json"}
	if j.direct {
		args = append(args, "--direct=1")
	}
	cmd := exec.CommandContext(ctx, fioPath, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("fio %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	// fio may print notes before the JSON document.
	if i := bytes.IndexByte(b, '{'); i > 0 {
		b = b[i:]
	}
	var res struct {
		Jobs []struct {
			Error int `json:"error"`
			Read  struct {
				IOPS float64 `json:"iops"`
			} `json:"read"`
			Write struct {
				IOPS float64 `json:"iops"`
			} `json:"write"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return 0, fmt.Errorf("fio output is not JSON: %v", err)
	}
	if len(res.Jobs) == 0 || res.Jobs[0].Error != 0 {
		return 0, fmt.Errorf("fio reported no job or an error: %s", stderr.Bytes())
	}
	return res.Jobs[0].Read.IOPS + res.Jobs[0].Write.IOPS, nil
}
