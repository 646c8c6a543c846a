package procfs

// ioCounters is /proc/PID/io. The kernel adds a reaped child's counters to
// its parent's (kernel/exit.c, wait_task_zombie), like cutime.
type ioCounters struct {
	rchar, wchar, syscr, syscw, readBytes, writeBytes, cancelled uint64
}

// counters are a process's cumulative figures from /proc/PID/stat and io.
type counters struct {
	utime, stime, cutime, cstime uint64
	io                           ioCounters
}

// credit is what reaped tracked descendants had already been credited with.
// Their final totals arrive in the reaper's cutime/cstime/io; this much of
// that increase was counted already and is taken off.
type credit struct {
	user, sys uint64
	io        ioCounters
}

// sat is a-b for counters that only grow; a reset or wrap gives 0 rather
// than a huge or negative delta.
func sat(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}

// take removes what is pending from a delta and returns the rest.
func take(pending *uint64, d uint64) uint64 {
	used := min(*pending, d)
	*pending -= used
	return d - used
}

func subIO(a, b ioCounters) ioCounters {
	return ioCounters{sat(a.rchar, b.rchar), sat(a.wchar, b.wchar), sat(a.syscr, b.syscr), sat(a.syscw, b.syscw),
		sat(a.readBytes, b.readBytes), sat(a.writeBytes, b.writeBytes), sat(a.cancelled, b.cancelled)}
}

func addIO(a, b ioCounters) ioCounters {
	return ioCounters{a.rchar + b.rchar, a.wchar + b.wchar, a.syscr + b.syscr, a.syscw + b.syscw,
		a.readBytes + b.readBytes, a.writeBytes + b.writeBytes, a.cancelled + b.cancelled}
}

func takeIO(pending *ioCounters, d ioCounters) ioCounters {
	return ioCounters{take(&pending.rchar, d.rchar), take(&pending.wchar, d.wchar), take(&pending.syscr, d.syscr),
		take(&pending.syscw, d.syscw), take(&pending.readBytes, d.readBytes), take(&pending.writeBytes, d.writeBytes),
		take(&pending.cancelled, d.cancelled)}
}
