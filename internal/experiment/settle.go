package experiment

import (
	"context"
	"time"

	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
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
	settleMax = 3 * time.Second
)

// settle syncs the file system behind dir (syncfs: the previous run's
// dirty pages and journal) and waits until disks have had no request in
// flight for settleQuiet, at most settleMax. It returns how long it took.
func settle(ctx context.Context, dir string, disks []string) time.Duration {
	start := time.Now()
	if dir != "" {
		if fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
			unix.Syncfs(fd)
			unix.Close(fd)
		}
	}
	sysinfo.WaitDisksIdle(ctx, disks, settleQuiet, settleMax)
	return time.Since(start)
}
