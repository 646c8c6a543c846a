/* rmfiles: removing many small files: makes 3000 files of 16 KiB in a
 * directory and syncs its file system, then unlinks every other one (so that
 * no two freed extents touch and merge into one discard) and syncs the file
 * system. On a file system mounted with discard, ext4 discards the freed
 * blocks after each journal commit, from a work queue, one request per
 * extent: more discards than the (merged) writes that made the files. The
 * program then sleeps a second, so that the discards fall in the window.
 * Finding: device.discards. */
#include "common.h"
#include <sys/stat.h>
int main(void)
{
	char name[64], buf[16384];
	memset(buf, 'f', sizeof buf);
	if (mkdir("scenario-rm", 0700) && errno != EEXIST)
		die("mkdir");
	for (int i = 0; i < 3000; i++) {
		snprintf(name, sizeof name, "scenario-rm/f%05d", i);
		int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || write(fd, buf, sizeof buf) != sizeof buf)
			die("create");
		close(fd);
	}
	int d = open("scenario-rm", O_RDONLY);
	if (d < 0 || syncfs(d))
		die("syncfs");
	for (int i = 0; i < 3000; i += 2) {
		snprintf(name, sizeof name, "scenario-rm/f%05d", i);
		if (unlink(name))
			die("unlink");
	}
	if (syncfs(d))
		die("syncfs");
	sleep(1);
	for (int i = 1; i < 3000; i += 2) {
		snprintf(name, sizeof name, "scenario-rm/f%05d", i);
		unlink(name);
	}
	close(d);
	rmdir("scenario-rm");
	return 0;
}
