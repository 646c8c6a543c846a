/* tiny writes: 16-byte write(2) calls to a file, unbuffered.
 * Finding: syscall.tiny_io. */
#include "common.h"
int main(void)
{
	int fd = scratch_file("scenario-tiny", 0, 0);
	char rec[16] = "0123456789abcde";
	double end = now() + RUN_SECONDS;
	while (now() < end) {
		for (int i = 0; i < 4096; i++)
			if (write(fd, rec, sizeof rec) != sizeof rec)
				die("write");
		lseek(fd, 0, SEEK_SET); /* rewrite the same 64 KiB: the point is the calls */
	}
	return 0;
}
