/* storage-sync: append 4 KiB and fdatasync, again and again (a database's
 * commit log). Verdict: storage-sync. */
#include "common.h"
int main(void)
{
	int fd = scratch_file("scenario-sync", 0, 0);
	char buf[4096];
	memset(buf, 1, sizeof buf);
	double end = now() + RUN_SECONDS;
	while (now() < end) {
		if (write(fd, buf, sizeof buf) != sizeof buf)
			die("write");
		if (fdatasync(fd))
			die("fdatasync");
	}
	return 0;
}
