package analyze

import (
	"fmt"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// Device saturation: the device cannot take more work. The sign is that
// requests wait in the kernel's queue at least as long as the device takes
// to serve them (biolatency -Q against plain biolatency) while at least
// half of them (deviceDeepShare) found another request in the driver at
// issue, the USE method's "average queue length above 1": the device's
// queue is full and requests back up behind it. %util alone does not show
// it for a device that serves requests in parallel (SSD, NVMe, RAID, most
// virtual disks: iostat(1) says so), which can be busy 100% of the time
// with capacity to spare; only for a rotational disk, which serves one
// request at a time, is %util at 90% or more (deviceUtilSaturated, the
// usual mark in iostat -x reading) a sign by itself, and then the probe's
// own busy time (deviceUtil), not the kernel's jiffy-counted io_ticks.
// Regression: it fired on sysbench random writes at 4% util, and on fio at
// iodepth 1 by %util. deviceMinRequests: means and histograms of fewer
// than 1000 requests say little, and the queue test needs them.
const (
	deviceUtilSaturated = 90
	deviceDeepShare     = 0.5
	deviceMinRequests   = 1000
)

func deviceSaturated(run *model.Run) *model.Finding {
	if run.Storage == nil {
		return nil
	}
	w := window(run)
	rotational := run.Host.Storage != nil && run.Host.Storage.Rotational != nil && *run.Host.Storage.Rotational
	var ev []string
	var test *model.FindingTest
	n, byUtil := 0, false
	for _, d := range run.Storage.Devices {
		ds := summarizeDevice(d)
		if !ds.workload {
			continue
		}
		pct, label := deviceUtil(d)
		util := rotational && pct >= deviceUtilSaturated
		queued := ds.issued >= deviceMinRequests && ds.service > 0 && ds.queue >= ds.service &&
			float64(ds.issued-ds.depth1) >= deviceDeepShare*float64(ds.issued)
		if !util && !queued {
			continue
		}
		n++
		byUtil = byUtil || util && !queued
		// The test is the first device's: its share of requests issued
		// with another in flight, the depth sign that goes with the
		// queue one, or its busy share when only that fired.
		if test == nil && queued {
			test = &model.FindingTest{Name: devName(d) + ": share of requests issued with another in flight",
				Value: float64(ds.issued-ds.depth1) / float64(ds.issued), Op: ">=", Threshold: deviceDeepShare}
		} else if test == nil {
			test = &model.FindingTest{Name: devName(d) + ": % of the window " + label + " (rotational)", Value: pct, Op: ">=", Threshold: deviceUtilSaturated}
		}
		line := fmt.Sprintf("%s: %.0f%% %s, %s requests%s, %s%s", devName(d), pct, label,
			units.FormatCount(ds.requests), perSec(ds.requests, w, units.FormatCount), units.FormatSize(ds.bytes), perSec(ds.bytes, w, units.FormatSize))
		if ds.service > 0 {
			line += fmt.Sprintf(", mean queue %s, service %s", units.FormatNs(ds.queue*1e9), units.FormatNs(ds.service*1e9))
		}
		if ds.issued > 0 {
			line += fmt.Sprintf(", %.0f%% of requests issued with another in flight", pctOf(ds.issued-ds.depth1, ds.issued))
		}
		ev = append(ev, line)
	}
	if len(ev) == 0 {
		return nil
	}
	if byUtil {
		ev = append(ev, "a rotational disk busy this much serves its requests one after the other with little idle time left")
	}
	ev = append(ev, "requests wait for the device: fewer or larger requests (merging, larger blocks), less data (the page cache, compression), or a faster device; an io-pressure experiment shows whether the workload feels it")
	// A warning when the workload's own storage waits are a material
	// share of its time; otherwise the device is full of others' work.
	f := &model.Finding{
		Severity: "info",
		Summary:  fmt.Sprintf("%d %s saturated", n, plural(n, "block device looks", "block devices look")),
		Evidence: ev,
		Test:     test,
	}
	if ta := run.TimeAccounting; attributesStorage(ta) {
		st := share(ta, model.CatStorageRead) + share(ta, model.CatStorageWrite) + share(ta, model.CatStorageSync)
		f.Share = &st
		if st >= materialShare {
			f.Severity = "warning"
		}
	}
	return f
}
