package fileio

import (
	"context"
	"errors"
	"fmt"
	"golang.org/x/sys/unix"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/workload"
)

// progressInterval is how often Run reports progress: 4 times a second is
// smooth for a terminal and costs nothing measurable.
const progressInterval = 250 * time.Millisecond

var _ workload.Workload = (*FileIO)(nil)

// Run performs the measured phase. When ctx is cancelled every thread stops
// after its current op and Run returns the partial result with a nil error
// (end syncs are then skipped). When an op fails, the run stops and Run
// returns the result measured so far together with the error.
func (f *FileIO) Run(ctx context.Context, progress workload.Progress) (*model.Result, error) {
	if !f.prepared {
		return nil, errors.New("fileio: Run called before a successful Prepare")
	}
	cfg := f.cfg
	var stop, failed atomic.Bool
	workers := make([]*worker, cfg.Threads)
	defer func() {
		for _, w := range workers {
			if w != nil {
				w.close()
			}
		}
	}()
	for t := range workers {
		w, err := f.newWorker(t, &stop, &failed)
		if err != nil {
			return nil, err
		}
		workers[t] = w
	}

	begin := make(chan struct{})
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// One OS thread per benchmark thread, so per-thread observation
			// (/proc/PID/task, sched events) maps onto benchmark threads.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			w.tid = unix.Gettid()
			<-begin
			w.loop()
			if cfg.EndFsync && !failed.Load() && ctx.Err() == nil {
				w.endSync()
			}
		}()
	}

	done := make(chan struct{})
	var helpers sync.WaitGroup
	duration := time.Duration(cfg.DurationSec * float64(time.Second))
	start := time.Now()
	close(begin)
	helpers.Add(1)
	go func() {
		defer helpers.Done()
		var expired <-chan time.Time
		if duration > 0 {
			t := time.NewTimer(duration - time.Since(start))
			defer t.Stop()
			expired = t.C
		}
		select {
		case <-ctx.Done():
		case <-expired:
		case <-done:
		}
		stop.Store(true)
	}()
	fraction := func() float64 {
		var fr float64
		if duration > 0 {
			fr = float64(time.Since(start)) / float64(duration)
		}
		if cfg.Ops > 0 {
			var n int64
			for _, w := range workers {
				n += w.done.Load()
			}
			fr = max(fr, float64(n)/float64(cfg.Ops))
		}
		return min(fr, 1)
	}
	if progress != nil {
		helpers.Add(1)
		go func() {
			defer helpers.Done()
			tk := time.NewTicker(progressInterval)
			defer tk.Stop()
			for {
				select {
				case <-done:
					return
				case <-tk.C:
					progress(fraction())
				}
			}
		}()
	}

	wg.Wait()
	elapsed := time.Since(start)
	close(done)
	helpers.Wait()

	var runErr error
	for _, w := range workers {
		if w.err != nil {
			runErr = w.err
			break
		}
	}
	if progress != nil && runErr == nil && ctx.Err() == nil {
		progress(1)
	}
	res := f.result(workers, elapsed)
	if f.cfg.Verify && runErr == nil && ctx.Err() == nil {
		// After every thread is done, each block once: a block another
		// thread wrote last holds that thread's seal, which checks as well.
		if beforeVerify != nil {
			beforeVerify()
		}
		marks := make([][]uint64, f.cfg.Files)
		for _, w := range workers {
			for fi, m := range w.wroteBlocks {
				if m == nil {
					continue
				}
				if marks[fi] == nil {
					marks[fi] = make([]uint64, len(m))
				}
				for i, word := range m {
					marks[fi][i] |= word
				}
			}
		}
		v := &model.VerifyStats{}
		if err := workers[0].verifyBlocks(marks, v); err != nil {
			runErr = err
		}
		res.FileIO.Verify = v
		if runErr == nil && v.Bad > 0 {
			runErr = fmt.Errorf("verify: %d of the %d blocks read back were not as written; the first: %s", v.Bad, v.Blocks, v.First)
		}
	}
	return res, runErr
}

// beforeVerify, when set (tests), runs between the run and --verify's
// read-back.
var beforeVerify func()

// result merges the workers' counters and histograms.
func (f *FileIO) result(workers []*worker, elapsed time.Duration) *model.Result {
	secs := elapsed.Seconds()
	rrec, wrec, srec := workload.NewRecorder(), workload.NewRecorder(), workload.NewRecorder()
	var slat, clat [2]*workload.Recorder
	var depths []int64
	var reads, writes, syncs int64
	threadOps := make([]int64, len(workers))
	var tids []int
	for i, w := range workers {
		if w.tid != 0 {
			tids = append(tids, w.tid)
		}
		rrec.Merge(w.rrec)
		wrec.Merge(w.wrec)
		srec.Merge(w.srec)
		if a := w.async; a != nil {
			for k := range 2 {
				if slat[k] == nil {
					slat[k], clat[k] = workload.NewRecorder(), workload.NewRecorder()
				}
				slat[k].Merge(a.slat[k])
				clat[k].Merge(a.clat[k])
			}
			if len(depths) < len(a.depthSamples) {
				depths = append(depths, make([]int64, len(a.depthSamples)-len(depths))...)
			}
			for n, c := range a.depthSamples {
				depths[n] += c
			}
		}
		reads += w.reads
		writes += w.writes
		syncs += w.syncs
		threadOps[i] = w.reads + w.writes
	}
	syncName := "fsync"
	if f.cfg.Fdatasync {
		syncName = "fdatasync"
	}
	var ops []model.OpStats
	add := func(op string, count, bytes int64, rec *workload.Recorder) {
		if count == 0 {
			return
		}
		s := model.OpStats{Op: op, Count: count, Bytes: bytes, Latency: rec.Summary()}
		if k := map[string]int{"read": 0, "write": 1}[op]; slat[k] != nil && op != syncName {
			sl, cl := slat[k].Summary(), clat[k].Summary()
			s.SubmitLatency, s.CompleteLatency = &sl, &cl
		}
		if secs > 0 {
			s.OpsPerSec = float64(count) / secs
			s.MiBPerSec = float64(bytes) / (1 << 20) / secs
		}
		ops = append(ops, s)
	}
	add("read", reads, reads*f.cfg.BS, rrec)
	add("write", writes, writes*f.cfg.BS, wrec)
	add(syncName, syncs, 0, srec)
	return &model.Result{
		DurationSec: secs,
		WorkerTIDs:  tids,
		FileIO:      &model.FileIOResult{Prepare: f.prep, Ops: ops, ThreadOps: threadOps, Depths: depths},
	}
}
