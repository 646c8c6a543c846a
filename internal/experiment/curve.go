package experiment

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/workload/fileio"
)

// The device curve (diagnose --device-curve): what the device under the
// workload's directory gives at queue depth 1, 2, 4, ... until its IOPS
// stop growing, measured with the fileio benchmark's asynchronous engine
// (4 KiB random O_DIRECT reads, one thread) on a scratch file there. The
// verdict places the workload on it: the IOPS it got at the depth it
// issued against the device's at that depth, and what a deeper queue gives.

const (
	// curveFileSize is the scratch file's size: larger than a virtual
	// disk's host cache would keep warm in a second, small enough to lay
	// out in a moment.
	curveFileSize = 256 << 20
	// curvePoint is how long each depth runs.
	curvePoint = time.Second
	// curveMaxDepth ends the curve where it has not flattened by then.
	curveMaxDepth = 128
	// curveGain: a doubling of the depth that adds less than this share
	// of IOPS is past the knee; two in a row end the curve.
	curveGain = 0.10
)

// measureCurve measures the device curve in dir, on the engine that opens
// here (io_uring, else libaio); it removes what it wrote.
func measureCurve(ctx context.Context, dir string, st *model.Storage) (*model.DeviceCurve, error) {
	scratch, err := os.MkdirTemp(dir, "perfsleuth-curve-")
	if err != nil {
		return nil, fmt.Errorf("a scratch directory in %s: %w", dir, err)
	}
	defer os.RemoveAll(scratch)
	cfg := fileio.Defaults()
	cfg.RW, cfg.BS, cfg.Size, cfg.Direct, cfg.Dir, cfg.Keep = "randread", 4096, curveFileSize, true, scratch, true
	cfg.DurationSec = curvePoint.Seconds()
	var why error
	for _, engine := range []string{"io_uring", "libaio"} {
		cfg.IOEngine, cfg.IODepth = engine, 1
		if why = fileio.Validate(&cfg); why == nil {
			break
		}
	}
	if why != nil {
		return nil, fmt.Errorf("the curve needs an asynchronous engine with O_DIRECT here: %w", why)
	}
	c := &model.DeviceCurve{Engine: cfg.IOEngine, BS: cfg.BS, FileBytes: curveFileSize}
	if st != nil {
		c.Device, c.Disks = st.Device, st.Disks
	}
	low := 0
	for depth := 1; depth <= curveMaxDepth; depth *= 2 {
		cfg.IODepth = depth
		p, err := curvePointAt(ctx, cfg)
		if err != nil {
			return nil, err
		}
		c.Points = append(c.Points, p)
		if n := len(c.Points); n > 1 {
			prev := c.Points[n-2]
			if p.IOPS < prev.IOPS*(1+curveGain) {
				if low++; low == 1 {
					c.Knee = prev.Depth
				}
				if low == 2 {
					break
				}
			} else {
				low, c.Knee = 0, 0
			}
		}
	}
	return c, nil
}

// curvePointAt runs the benchmark once at cfg's depth.
func curvePointAt(ctx context.Context, cfg model.FileIOConfig) (model.CurvePoint, error) {
	f, err := fileio.New(cfg)
	if err != nil {
		return model.CurvePoint{}, err
	}
	defer f.Cleanup()
	if err := f.Prepare(ctx); err != nil {
		return model.CurvePoint{}, err
	}
	res, err := f.Run(ctx, nil)
	if err != nil {
		return model.CurvePoint{}, err
	}
	if ctx.Err() != nil {
		return model.CurvePoint{}, ctx.Err()
	}
	p := model.CurvePoint{Depth: cfg.IODepth}
	for _, op := range res.FileIO.Ops {
		if op.Op == "read" {
			p.IOPS, p.P50Ns, p.P99Ns = op.OpsPerSec, op.Latency.P50Ns, op.Latency.P99Ns
		}
	}
	return p, nil
}

// measurePeakIOPS is the most IOPS the device under dir gives: its curve's
// highest point, and how it was measured.
func measurePeakIOPS(ctx context.Context, dir string, st *model.Storage) (float64, string, error) {
	c, err := measureCurve(ctx, dir, st)
	if err != nil {
		return 0, "", err
	}
	var best model.CurvePoint
	for _, p := range c.Points {
		if p.IOPS > best.IOPS {
			best = p
		}
	}
	if best.IOPS <= 0 {
		return 0, "", fmt.Errorf("the device curve measured no IOPS")
	}
	return best.IOPS, fmt.Sprintf("4 KiB random O_DIRECT reads at depth %d, measured now (%s)", best.Depth, c.Engine), nil
}
