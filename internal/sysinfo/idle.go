package sysinfo

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// WaitDisksIdle waits until disks have had no request in flight for quiet,
// at most max, and returns how long it waited. A disk whose in-flight
// counts (/sys/block/DISK/inflight) cannot be read is not waited for.
func WaitDisksIdle(ctx context.Context, disks []string, quiet, max time.Duration) time.Duration {
	const poll = 10 * time.Millisecond
	start := time.Now()
	quietSince := start
	for time.Since(start) < max && ctx.Err() == nil {
		if DisksInFlight(disks) > 0 {
			quietSince = time.Now()
		} else if time.Since(quietSince) >= quiet {
			break
		}
		time.Sleep(poll)
	}
	return time.Since(start)
}

// DisksInFlight is the requests in flight on disks, from
// /sys/block/DISK/inflight ("reads writes"); unreadable counts as none.
func DisksInFlight(disks []string) int {
	n := 0
	for _, d := range disks {
		b, err := os.ReadFile(filepath.Join("/sys/block", d, "inflight"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			v, _ := strconv.Atoi(f)
			n += v
		}
	}
	return n
}
