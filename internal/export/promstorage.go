package export

import (
	"strconv"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// Two views of the disks share the export, named apart: perfsleuth_block_*
// is the eBPF storage probe's (every request, split by who issued it),
// perfsleuth_disk_* the /proc/diskstats view (iostat -x) of the observer.

func promStorage(s *promSet, st *model.StorageIO) {
	if st == nil {
		return
	}
	for _, d := range st.Devices {
		s.counter("block_busy_seconds_total", "Seconds each block device had at least one request in flight, from /proc/diskstats' io_ticks (iostat's; counted in jiffies).").add(d.BusySec, "device", d.Name)
		s.gauge("block_utilization_ratio", "Share of the window each block device was busy (iostat's %util / 100, from /proc/diskstats' io_ticks).").add(d.UtilPct/100, "device", d.Name)
		if d.DriverBusySec != nil && d.DriverUtilPct != nil {
			s.counter("block_driver_busy_seconds_total", "Seconds each block device had at least one request in the driver, measured to the nanosecond (eBPF).").add(*d.DriverBusySec, "device", d.Name)
			s.gauge("block_driver_utilization_ratio", "Share of the window each block device had a request in the driver (eBPF).").add(*d.DriverUtilPct/100, "device", d.Name)
		}
		for _, op := range d.Ops {
			l := []string{"device", d.Name, "op", op.Op}
			s.counter("block_requests_total", "Block requests completed, per device and op (read, write, flush, discard, other).").add(float64(op.Requests), l...)
			s.counter("block_bytes_total", "Bytes of the completed block requests.").add(float64(op.Bytes), l...)
			s.counter("block_merges_total", "Bios merged into requests already queued.").add(float64(op.Merges), l...)
			s.counter("block_workload_requests_total", "Block requests the workload's threads issued.").add(float64(op.WorkloadRequests), l...)
			s.counter("block_workload_bytes_total", "Bytes of the block requests the workload's threads issued.").add(float64(op.WorkloadBytes), l...)
			s.counter("block_writeback_requests_total", "Block requests another task (the flusher) issued for pages of files the workload wrote.").add(float64(op.WritebackRequests), l...)
			s.counter("block_writeback_bytes_total", "Bytes of the writeback requests for the workload's files.").add(float64(op.WritebackBytes), l...)
			s.gauge("block_queue_mean_seconds", "Mean time from a request's start to its issue to the driver.").add(op.QueueMeanSec, l...)
			s.gauge("block_service_mean_seconds", "Mean time from a request's issue to its completion.").add(op.ServiceMeanSec, l...)
		}
	}
	for _, a := range st.AsyncIO {
		l := []string{"interface", a.Interface}
		s.counter("async_io_reads_total", "Reads the workload's asynchronous IO completed (libaio, io_uring), which /proc's rchar leaves out.").add(float64(a.Reads), l...)
		s.counter("async_io_read_bytes_total", "Bytes the workload's asynchronous reads moved.").add(float64(a.ReadBytes), l...)
		s.counter("async_io_writes_total", "Writes the workload's asynchronous IO completed.").add(float64(a.Writes), l...)
		s.counter("async_io_write_bytes_total", "Bytes the workload's asynchronous writes moved.").add(float64(a.WriteBytes), l...)
	}
	if c := st.Cache; c != nil {
		// -1 marks "no buffered read" and "unknown HZ": no figure at all.
		if c.HitRatio >= 0 {
			s.gauge("page_cache_hit_ratio", "1 - pages added by the workload's reads / pages they looked up.").add(c.HitRatio)
		}
		// The per-page counts are absent, not 0, when their programs did
		// not run (without --storage).
		if !c.PagesNotCounted {
			s.counter("page_cache_lookups_total", "Pages the workload's buffered reads looked up in the page cache.").add(float64(c.Lookups))
			s.counter("page_cache_read_added_total", "Pages added to the page cache during the workload's reads (misses and their readahead).").add(float64(c.ReadAdded))
			s.counter("page_cache_other_added_total", "Pages added outside read calls (writes to new pages, mmap faults).").add(float64(c.OtherAdded))
		}
		s.counter("page_cache_fault_lookups_total", "Page cache lookups of page faults.").add(float64(c.FaultLookups))
		s.counter("page_cache_readahead_total", "Readahead windows, started by a miss (sync) or by reaching the marker of the previous window (async).").add(float64(c.ReadaheadSync), "trigger", "sync")
		s.counter("page_cache_readahead_total", "").add(float64(c.ReadaheadAsync), "trigger", "async")
		if !c.PagesNotCounted {
			s.counter("page_cache_dirtied_total", "Pages the workload dirtied.").add(float64(c.Dirtied))
		}
		s.counter("page_cache_written_back_bytes_total", "Bytes of block write requests for the workload's files, whoever issued them.").add(float64(c.WrittenBackBytes))
		s.counter("page_cache_throttled_total", "Dirty-page balancing pauses of the workload.").add(float64(c.Throttled))
		if c.ThrottledSec >= 0 {
			s.counter("page_cache_throttled_seconds_total", "Summed length of the dirty-page balancing pauses, as the kernel planned them.").add(c.ThrottledSec)
		}
	}
	for _, f := range st.Files {
		s.counter("file_reads_total", "Read calls per file path (with --storage; files that had the same path summed).").add(float64(f.Reads.Count), "path", f.Path)
		s.counter("file_read_bytes_total", "Bytes read per file path.").add(float64(f.Reads.Bytes), "path", f.Path)
		s.counter("file_writes_total", "Write calls per file path.").add(float64(f.Writes.Count), "path", f.Path)
		s.counter("file_written_bytes_total", "Bytes written per file path.").add(float64(f.Writes.Bytes), "path", f.Path)
		s.counter("file_blocked_seconds_total", "Seconds the calls on each file path were blocked on storage.").add(f.BlockedSec, "path", f.Path)
		s.counter("file_lock_seconds_total", "Seconds the calls on each file path waited on locks.").add(f.LockSec, "path", f.Path)
		s.counter("file_errors_total", "Calls on each file path that failed.").add(float64(f.Errors), "path", f.Path)
	}
	s.counter("storage_probe_runs_total", "Runs of the eBPF storage programs, machine-wide.").add(float64(st.ProbeRuns))
	d := st.Dropped
	for _, x := range []struct {
		what string
		n    int64
	}{{"requests", d.Requests}, {"file_ops", d.FileOps}, {"sqlite_events", d.SQLiteEvents}, {"unseen_completions", d.Unseen}} {
		s.counter("storage_probe_dropped_total", "What the storage probe could not record (map or buffer full; unseen_completions: requests started before it).").add(float64(x.n), "what", x.what)
	}
}

func promObservation(s *promSet, o *model.Observation) {
	if o == nil {
		return
	}
	s.gauge("observation_duration_seconds", "Length of the observation window.").add(o.DurationSec)
	s.counter("observer_cpu_seconds_total", "CPU seconds the observer itself used in the window.").add(o.ObserverCPUSec)
	p := o.Totals.Process
	s.counter("process_cpu_seconds_total", "CPU seconds of the workload's process tree, per mode (/proc).").add(p.UserSec, "mode", "user")
	s.counter("process_cpu_seconds_total", "").add(p.SystemSec, "mode", "system")
	s.counter("process_context_switches_total", "Context switches of the workload's threads, voluntary (blocked) and nonvoluntary (preempted).").add(float64(p.VolCtxSw), "kind", "voluntary")
	s.counter("process_context_switches_total", "").add(float64(p.InvolCtxSw), "kind", "nonvoluntary")
	s.counter("process_syscall_read_bytes_total", "Bytes the workload's read calls returned, cache hits included (/proc/PID/io rchar).").add(float64(p.RChar))
	s.counter("process_syscall_written_bytes_total", "Bytes the workload's write calls took (/proc/PID/io wchar).").add(float64(p.WChar))
	s.counter("process_read_syscalls_total", "Read calls of the workload (/proc/PID/io syscr).").add(float64(p.SyscR))
	s.counter("process_write_syscalls_total", "Write calls of the workload (/proc/PID/io syscw).").add(float64(p.SyscW))
	s.counter("process_storage_read_bytes_total", "Bytes the workload asked the block layer to read (/proc/PID/io read_bytes).").add(float64(p.ReadBytes))
	s.counter("process_storage_written_bytes_total", "Bytes of page-cache pages the workload dirtied and its direct writes (/proc/PID/io write_bytes).").add(float64(p.WriteBytes))
	s.counter("process_cancelled_write_bytes_total", "Bytes of dirty pages the workload dropped (truncate, unlink).").add(float64(p.CancelledWriteBytes))
	s.counter("process_io_delay_seconds_total", "Block-IO wait of the workload's threads (delay accounting, when on).").add(p.IODelaySec)
	s.counter("process_run_delay_seconds_total", "Time the workload's threads waited on a run queue (schedstat).").add(p.RunDelaySec)
	s.gauge("process_threads", "Threads of the workload seen in the window.").add(float64(p.Threads))
	for _, c := range o.Totals.CPUs {
		cpu := "all"
		if c.CPU >= 0 {
			cpu = strconv.Itoa(c.CPU)
		}
		for _, m := range []struct {
			mode string
			pct  float64
		}{{"user", c.User}, {"nice", c.Nice}, {"system", c.System}, {"iowait", c.IOWait}, {"irq", c.IRQ}, {"softirq", c.SoftIRQ}, {"steal", c.Steal}, {"idle", c.Idle}} {
			s.gauge("host_cpu_time_ratio", "Share of the window each CPU spent in each mode (/proc/stat; cpu=\"all\" is the average).").add(m.pct/100, "cpu", cpu, "mode", m.mode)
		}
	}
	for _, d := range o.Totals.Disks {
		s.counter("disk_reads_total", "Reads completed per whole disk in the window (/proc/diskstats).").add(float64(d.Reads), "device", d.Device)
		s.counter("disk_writes_total", "Writes completed per whole disk.").add(float64(d.Writes), "device", d.Device)
		s.counter("disk_read_bytes_total", "Bytes read per whole disk.").add(float64(d.ReadBytes), "device", d.Device)
		s.counter("disk_written_bytes_total", "Bytes written per whole disk.").add(float64(d.WriteBytes), "device", d.Device)
		s.gauge("disk_utilization_ratio", "Share of the window each disk was busy (iostat's %util / 100).").add(d.UtilPct/100, "device", d.Device)
		s.gauge("disk_read_await_seconds", "Mean time of a read, queue included (iostat's r_await).").add(d.RAwaitMs/1000, "device", d.Device)
		s.gauge("disk_write_await_seconds", "Mean time of a write, queue included (iostat's w_await).").add(d.WAwaitMs/1000, "device", d.Device)
		s.gauge("disk_queue_length", "Mean number of requests in flight (iostat's aqu-sz).").add(d.AvgQueue, "device", d.Device)
	}
}
