/* clientserver: a client process sends requests to a server process over
 * TCP on the loopback interface, one at a time, and waits for each reply;
 * the server works 200 µs on the CPU per request. Each side waits on the
 * other (the loopback's receive path runs in the sender's softirq), so
 * summed over the threads most time is asleep in socket calls. Verdict:
 * cpu (the server's work, on the path of every request). */
#include "common.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
int main(void)
{
	int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof addr;
	if (ls < 0 || bind(ls, (struct sockaddr *)&addr, sizeof addr) || listen(ls, 1) ||
	    getsockname(ls, (struct sockaddr *)&addr, &len))
		die("listen");
	pid_t srv = fork();
	if (srv == 0) {
		int c = accept(ls, NULL, NULL);
		char req[64];
		if (c < 0)
			die("accept");
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		while (read(c, req, sizeof req) > 0) {
			spin(200);
			if (write(c, req, 8) != 8)
				die("reply");
		}
		return 0;
	}
	close(ls);
	int s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&addr, sizeof addr))
		die("connect");
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	char msg[8] = "request", rep[64];
	double end = now() + RUN_SECONDS;
	while (now() < end) {
		if (write(s, msg, sizeof msg) != sizeof msg || read(s, rep, sizeof rep) <= 0)
			die("request");
	}
	close(s);
	waitpid(srv, NULL, 0);
	return 0;
}
