/* appendsync: append a 100-byte record and fdatasync it, again and again
 * (Redis with appendfsync always, a naive commit log). Each sync writes
 * the whole 4 KiB block the record went into: the device writes ~40x what
 * the program asked. Finding: storage.write_amplification. */
#include "common.h"
int main(void)
{
	char rec[100];
	memset(rec, 'r', sizeof rec);
	int fd = scratch_file("scenario-append", 0, 0);
	double end = now() + RUN_SECONDS;
	while (now() < end) {
		if (write(fd, rec, sizeof rec) != sizeof rec || fdatasync(fd))
			die("append");
	}
	return 0;
}
