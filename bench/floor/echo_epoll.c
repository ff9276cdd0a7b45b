/*
 * The floor for an echo server on epoll: one thread, level-triggered, one
 * read(2) and one write(2) per message, epoll_wait(2) amortised over every
 * connection that is ready. Nothing a library adds is here, so the CPU time
 * it spends per message is what the kernel's TCP path costs; a library's
 * figure over this one is the library's own cost.
 *
 *   cc -O2 -o echo_epoll echo_epoll.c && ./echo_epoll 9000
 *
 * Written for the unipoll bench (bench/floor); it prints "READY" once it
 * listens and runs until it is killed. A write that the socket does not
 * take in full keeps the rest and waits for EPOLLOUT, reading nothing from
 * that connection meanwhile (which an echo of small messages never needs,
 * but a correct server must do).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define BUFSIZE (64 * 1024)
#define MAXEVENTS 256

/* pending holds the unwritten rest of an echo, per descriptor. */
struct pending {
	char *buf;
	size_t off, len;
};

static struct pending *pend;
static size_t npend;

static void die(const char *what) {
	perror(what);
	exit(1);
}

static struct pending *pending_of(int fd) {
	if ((size_t)fd >= npend) {
		size_t n = npend ? npend : 1024;
		while (n <= (size_t)fd)
			n *= 2;
		pend = realloc(pend, n * sizeof *pend);
		if (!pend)
			die("realloc");
		memset(pend + npend, 0, (n - npend) * sizeof *pend);
		npend = n;
	}
	return &pend[fd];
}

static void drop(int ep, int fd) {
	struct pending *p = pending_of(fd);
	free(p->buf);
	memset(p, 0, sizeof *p);
	epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
	close(fd);
}

static void watch(int ep, int op, int fd, unsigned events) {
	struct epoll_event ev = {.events = events, .data.fd = fd};
	if (epoll_ctl(ep, op, fd, &ev) < 0)
		die("epoll_ctl");
}

/* flush writes what is pending; it returns 1 when all of it went out. */
static int flush(int ep, int fd) {
	struct pending *p = pending_of(fd);
	while (p->off < p->len) {
		ssize_t n = write(fd, p->buf + p->off, p->len - p->off);
		if (n < 0) {
			if (errno == EAGAIN)
				return 0;
			drop(ep, fd);
			return -1;
		}
		p->off += n;
	}
	p->off = p->len = 0;
	watch(ep, EPOLL_CTL_MOD, fd, EPOLLIN);
	return 1;
}

static void echo(int ep, int fd, char *buf) {
	ssize_t n = read(fd, buf, BUFSIZE);
	if (n <= 0) {
		if (n < 0 && errno == EAGAIN)
			return;
		drop(ep, fd);
		return;
	}
	ssize_t w = write(fd, buf, n);
	if (w == n)
		return;
	if (w < 0) {
		if (errno != EAGAIN) {
			drop(ep, fd);
			return;
		}
		w = 0;
	}
	struct pending *p = pending_of(fd);
	p->buf = realloc(p->buf, n - w);
	if (!p->buf)
		die("realloc");
	memcpy(p->buf, buf + w, n - w);
	p->off = 0;
	p->len = n - w;
	watch(ep, EPOLL_CTL_MOD, fd, EPOLLOUT);
}

int main(int argc, char **argv) {
	if (argc != 2) {
		fprintf(stderr, "usage: %s port\n", argv[0]);
		return 2;
	}
	/* A write to a connection its peer has reset is an error to drop
	 * that connection for, not a signal that ends the server. */
	signal(SIGPIPE, SIG_IGN);
	/* Room for 10,000 connections: take the hard limit. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	int ln = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ln < 0)
		die("socket");
	int one = 1;
	setsockopt(ln, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[1]))};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(ln, (struct sockaddr *)&sa, sizeof sa) < 0)
		die("bind");
	if (listen(ln, 4096) < 0)
		die("listen");
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		die("epoll_create1");
	watch(ep, EPOLL_CTL_ADD, ln, EPOLLIN);
	printf("READY\n");
	fflush(stdout);

	static char buf[BUFSIZE];
	struct epoll_event evs[MAXEVENTS];
	for (;;) {
		int n = epoll_wait(ep, evs, MAXEVENTS, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("epoll_wait");
		}
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			if (fd == ln) {
				for (;;) {
					int c = accept4(ln, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
					if (c < 0)
						break; /* EAGAIN, or out of descriptors: retried on the next event */
					setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
					watch(ep, EPOLL_CTL_ADD, c, EPOLLIN);
				}
				continue;
			}
			if (evs[i].events & EPOLLOUT) {
				if (flush(ep, fd) != 1)
					continue;
			}
			if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
				echo(ep, fd, buf);
		}
	}
}
