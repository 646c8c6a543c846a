/* storage-sync: write 4 KiB and fdatasync, again and again (a database's
 * commit log). Verdict: storage-sync.
 * With an argument, "storagesync N" does exactly N writes and syncs (a fixed
 * amount of work, for diagnose), overwriting a preallocated 1 MiB log in a
 * cycle as a reused log does: no block allocation and no size change, so
 * fdatasync has no journal commit to make and the CPU has little to do; the
 * time is the device's write and cache flush. */
#include "common.h"
int main(int argc, char **argv)
{
	char buf[4096];
	memset(buf, 1, sizeof buf);
	if (argc > 1) {
		const off_t span = 1 << 20;
		int fd = scratch_file("scenario-sync", 0, span);
		long n = atol(argv[1]);
		for (long i = 0; i < n; i++) {
			if (pwrite(fd, buf, sizeof buf, (i * (off_t)sizeof buf) % span) != sizeof buf)
				die("pwrite");
			if (fdatasync(fd))
				die("fdatasync");
		}
		return 0;
	}
	int fd = scratch_file("scenario-sync", 0, 0);
	double end = now() + RUN_SECONDS;
	while (now() < end) {
		if (write(fd, buf, sizeof buf) != sizeof buf)
			die("write");
		if (fdatasync(fd))
			die("fdatasync");
	}
	return 0;
}
