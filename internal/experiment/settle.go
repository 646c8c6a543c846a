package experiment

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Between runs the device is left to finish what the previous run wrote:
// its dirty pages, its journal commit, the discards of the files it
// deleted (a file system mounted with `discard` trims at the journal
// commit after a delete, which slowed the next run's writes for seconds on
// the machine this was written on). Without it the runs of an experiment
// are not independent: each pays for the one before, and a batch drifts.
const (
	// settleQuiet is how long the disk must have nothing in flight.
	settleQuiet = 100 * time.Millisecond
	// settleMax bounds the wait: a disk another tenant keeps busy never
	// goes quiet.
	settleMax  = 3 * time.Second
	settlePoll = 10 * time.Millisecond
)

// settle syncs the file system behind dir (syncfs: the previous run's
// dirty pages and journal) and waits until disks have had no request in
// flight for settleQuiet, at most settleMax. It returns how long it took.
// A disk whose in-flight counters cannot be read is not waited for.
func settle(ctx context.Context, dir string, disks []string) time.Duration {
	start := time.Now()
	if dir != "" {
		if fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
			unix.Syncfs(fd)
			unix.Close(fd)
		}
	}
	quietSince := time.Now()
	for time.Since(start) < settleMax && ctx.Err() == nil {
		if inflight(disks) > 0 {
			quietSince = time.Now()
		} else if time.Since(quietSince) >= settleQuiet {
			break
		}
		time.Sleep(settlePoll)
	}
	return time.Since(start)
}

// inflight is the requests in flight on disks, from
// /sys/block/DISK/inflight ("reads writes"); unreadable counts as none.
func inflight(disks []string) int {
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
