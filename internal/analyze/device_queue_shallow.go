package analyze

import (
	"fmt"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// Shallow queue. queueDepth1Share: 90% of the workload's requests issued
// with none of its others in flight is a device driven as fio drives it
// with iodepth=1 (a synchronous engine, one thread): it serves one request
// at a time, and then its busy time measures it truly (the probe's,
// deviceUtil: iostat's %util reads ~99% for fio's 4,000 reads a second of
// 77 µs, a disk 31% busy, and 2.4% in another run). queueUtilMax: below
// 70% busy it has time to spare even so. queueStorageShare: the busy
// threads wait on storage 30% of their time or more, so that filling the
// device would pay (by Amdahl's law removing 30% speeds the work up by up
// to 1.43x).
const (
	queueDepth1Share  = 0.9
	queueUtilMax      = 70
	queueStorageShare = 0.3
)

func deviceQueueShallow(run *model.Run) *model.Finding {
	ta := run.TimeAccounting
	if run.Storage == nil || !attributesStorage(ta) {
		return nil
	}
	storage := share(ta, model.CatStorageRead) + share(ta, model.CatStorageWrite) + share(ta, model.CatStorageSync)
	// Its advice (issue requests in parallel) fits a workload that waits
	// for reads and writes, not one that waits for its syncs (a
	// single-threaded appender: fewer syncs is the remedy, sync.dominant's)
	// nor for discards (device.discards').
	if storage < queueStorageShare || share(ta, model.CatStorageSync) > share(ta, model.CatStorageRead)+share(ta, model.CatStorageWrite) {
		return nil
	}
	var ev []string
	for _, d := range run.Storage.Devices {
		ds := summarizeDevice(d)
		var rw, discards int64
		for _, o := range d.Ops {
			switch o.Op {
			case "read", "write":
				rw += o.WorkloadRequests
			case "discard":
				discards += o.Requests
			}
		}
		if discards >= rw {
			continue
		}
		// The workload's own depth: what it keeps in flight, whatever
		// else the disk serves.
		pct, label := deviceUtil(d)
		if !ds.workload || ds.ownIssued < deviceMinRequests || pct >= queueUtilMax ||
			float64(ds.ownDepth1) < queueDepth1Share*float64(ds.ownIssued) {
			continue
		}
		line := fmt.Sprintf("%s: %.0f%% of the workload's %s requests issued with none of its others in flight, %.0f%% %s",
			devName(d), pctOf(ds.ownDepth1, ds.ownIssued), units.FormatCount(ds.ownIssued), pct, label)
		if ds.ownService > 0 {
			line += ", its requests' mean service " + units.FormatNs(ds.ownService*1e9)
		}
		if ds.requests > 0 {
			line += ", " + units.FormatSize(ds.bytes/ds.requests) + " per request on average"
		}
		ev = append(ev, line)
	}
	if len(ev) == 0 {
		return nil
	}
	ev = append(ev,
		fmt.Sprintf("storage-read %.3fs, storage-write %.3fs, storage-sync %.3fs: %.0f%% of %.3fs busy-thread time",
			ta.Total[model.CatStorageRead], ta.Total[model.CatStorageWrite], ta.Total[model.CatStorageSync], storage*100, busySeconds(ta)),
		"the workload waits on storage one request at a time while the device has room: issue requests in parallel (more threads, io_uring or libaio with a queue depth above 1, as fio's iodepth), make them larger, or group commits so that one sync covers more work")
	return &model.Finding{
		Severity: "warning",
		Summary:  fmt.Sprintf("the workload waits on storage %.0f%% of its time but keeps the device's queue at depth 1", storage*100),
		Evidence: ev,
		Test:     &model.FindingTest{Name: "storage share", Value: storage, Op: ">=", Threshold: queueStorageShare},
		Share:    &storage,
	}
}
