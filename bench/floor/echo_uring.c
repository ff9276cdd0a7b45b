/*
 * The floor for an echo server on io_uring: one thread, completion mode.
 * The listener has one multishot accept; every connection has one
 * multishot receive that the kernel completes into buffers it takes from a
 * ring of provided buffers, so a message reaches user space without a
 * system call of its own. Each chunk received is echoed by a send that
 * goes to the kernel in the same io_uring_enter(2) as the next wait, and
 * its buffer goes back to the ring once the send completes. What is left
 * per message is a share of the enter calls, which one batch of ready
 * connections splits between them: a library on io_uring that spends more
 * CPU per message than this spends it on itself.
 *
 *   cc -O2 -Wall -Wextra -o echo_uring echo_uring.c -luring && ./echo_uring 9000
 *
 * Written for the unipoll bench (bench/floor), beside echo_epoll.c, with the
 * same command line; it prints "READY" once it listens and runs until it is
 * killed. liburing 2.3 (Debian 12's liburing-dev) is enough: the buffer ring
 * is registered with io_uring_register_buf_ring on memory of our own.
 *
 * What it deliberately does:
 * - Asks for IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN (the
 *   kernel runs completion work only when we wait, so a wait collects a
 *   batch), then COOP_TASKRUN, then nothing, as far as the kernel refuses.
 * - At most one send in flight per connection, and the chunks received
 *   meanwhile queue behind it: two sends on one socket in flight at once
 *   may go out of order. Sends carry MSG_WAITALL, so the kernel itself
 *   sends the rest of one that the socket took only in part; a completion
 *   that is short all the same (a signal) sends the rest from here.
 * - Waits for one completion more than the sends it has just submitted:
 *   a send to a loopback socket completes inside the submission, and
 *   waiting for just one completion would return at once with it, costing
 *   a second enter per batch. Every send completes without help from here
 *   (MSG_WAITALL), so the extra one comes from the load. It waits for one
 *   only while a completion would leave work here that no further one may
 *   come to prompt: a buffer queued behind a send, a receive waiting for
 *   buffers.
 * - A receive that the ring could not feed (ENOBUFS) ends; it is armed
 *   again once sends have given buffers back. A multishot receive or
 *   accept that ends for any other reason is armed again at once.
 * - EOF or an error closes the connection once nothing of it is in flight
 *   (an error on a send shuts the socket down first, so that its receive
 *   ends); data still queued for it is dropped, as echo_epoll.c does.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

/* -DNBUFS=4 -DBUFSIZE=64 make the buffer ring run dry (the ENOBUFS path),
 * -DSQ_ENTRIES=1 fill the submission ring within every batch. */
#ifndef NBUFS
#define NBUFS 8192 /* a power of two, at most 32768 */
#endif
#ifndef BUFSIZE
#define BUFSIZE 4096
#endif
#ifndef SQ_ENTRIES
#define SQ_ENTRIES 4096
#endif
#define BGID 1
#define CQ_ENTRIES 32768

enum { OP_ACCEPT = 1, OP_RECV, OP_SEND };

/* buf is the state of one provided buffer while user space holds it. */
struct buf {
	int next;      /* the next buffer in its connection's send queue, or -1 */
	unsigned off;  /* bytes of it sent so far */
	unsigned len;  /* bytes received into it */
};

/* conn is the state of one connection, by descriptor. */
struct conn {
	int head, tail;         /* the send queue, by buffer id; -1: empty */
	unsigned char armed;    /* its multishot receive is in the kernel */
	unsigned char sending;  /* head's send is in the kernel */
	unsigned char closing;  /* EOF or error seen: close once idle */
	unsigned char starved;  /* its receive ended with ENOBUFS */
	unsigned char shut;     /* shutdown(2) already called */
};

static struct io_uring ring;
static struct io_uring_buf_ring *br;
static char *bufmem;
static struct buf bufs[NBUFS];
static int avail = NBUFS;   /* buffers in the ring, as far as completions tell */
static int returned;        /* buffers added to the ring, not yet published */
static unsigned submitted;  /* sends prepared since the last submission */
static int queued;          /* buffers in send queues, in flight or behind one */
static int inflight;        /* sends in the kernel, one per connection at most */

static struct conn *conns;
static size_t nconns;
static int *starved;        /* descriptors whose receive waits for buffers */
static size_t nstarved, capstarved;

static void die(const char *what, int err) {
	fprintf(stderr, "%s: %s\n", what, strerror(err));
	exit(1);
}

static struct conn *conn_of(int fd) {
	if ((size_t)fd >= nconns) {
		size_t n = nconns ? nconns : 1024;
		while (n <= (size_t)fd)
			n *= 2;
		conns = realloc(conns, n * sizeof *conns);
		if (!conns)
			die("realloc", errno);
		memset(conns + nconns, 0, (n - nconns) * sizeof *conns);
		nconns = n;
	}
	return &conns[fd];
}

static uint64_t tag(int op, int fd) { return (uint64_t)op << 32 | (uint32_t)fd; }

/* sqe returns a free submission entry, submitting what is queued when the
 * submission ring is full. The sends that go then may complete before the
 * wait, and be harvested already: the wait must not count on them. */
static struct io_uring_sqe *sqe(void) {
	struct io_uring_sqe *s;
	while (!(s = io_uring_get_sqe(&ring))) {
		int ret = io_uring_submit(&ring);
		if (ret < 0 && ret != -EINTR && ret != -EBUSY)
			die("io_uring_submit", -ret);
		submitted = 0;
	}
	return s;
}

static void arm_accept(int ln) {
	struct io_uring_sqe *s = sqe();
	io_uring_prep_multishot_accept(s, ln, NULL, NULL, SOCK_CLOEXEC);
	io_uring_sqe_set_data64(s, tag(OP_ACCEPT, ln));
}

static void arm_recv(int fd) {
	struct io_uring_sqe *s = sqe();
	io_uring_prep_recv_multishot(s, fd, NULL, 0, 0);
	s->flags |= IOSQE_BUFFER_SELECT;
	s->buf_group = BGID;
	io_uring_sqe_set_data64(s, tag(OP_RECV, fd));
	conn_of(fd)->armed = 1;
}

static void send_head(int fd) {
	struct conn *c = conn_of(fd);
	struct buf *b = &bufs[c->head];
	struct io_uring_sqe *s = sqe();
	io_uring_prep_send(s, fd, bufmem + (size_t)c->head * BUFSIZE + b->off,
			   b->len - b->off, MSG_WAITALL | MSG_NOSIGNAL);
	io_uring_sqe_set_data64(s, tag(OP_SEND, fd));
	c->sending = 1;
	inflight++;
	submitted++;
}

/* give_back hands a buffer back to the kernel; the ring's tail moves for
 * all of them at once, before the next enter. */
static void give_back(int bid) {
	io_uring_buf_ring_add(br, bufmem + (size_t)bid * BUFSIZE, BUFSIZE, bid,
			      io_uring_buf_ring_mask(NBUFS), returned);
	returned++;
}

static void drop_queue(struct conn *c) {
	while (c->head >= 0) {
		int bid = c->head;
		c->head = bufs[bid].next;
		queued--;
		give_back(bid);
	}
	c->tail = -1;
}

/* set_closing marks fd to close; a receive still armed is ended by
 * shutting the socket down. */
static void set_closing(int fd) {
	struct conn *c = conn_of(fd);
	c->closing = 1;
	if (c->armed && !c->shut) {
		shutdown(fd, SHUT_RDWR);
		c->shut = 1;
	}
}

/* close_if_idle closes fd once it is closing and the kernel holds nothing
 * of it. A connection on the starved list leaves its entry there: the
 * cleared flag makes rearm_starved pass over it, even when a new
 * connection has the descriptor by then. */
static void close_if_idle(int fd) {
	struct conn *c = conn_of(fd);
	if (!c->closing || c->armed || c->sending)
		return;
	drop_queue(c);
	close(fd);
	memset(c, 0, sizeof *c);
	c->head = c->tail = -1;
}

static void on_accept(int ln, struct io_uring_cqe *cqe) {
	if (!(cqe->flags & IORING_CQE_F_MORE))
		arm_accept(ln);
	if (cqe->res < 0)
		return; /* out of descriptors, or the peer gave up: the next one may do */
	int fd = cqe->res, one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	struct conn *c = conn_of(fd);
	memset(c, 0, sizeof *c);
	c->head = c->tail = -1;
	arm_recv(fd);
}

static void on_recv(int fd, struct io_uring_cqe *cqe) {
	struct conn *c = conn_of(fd);
	int more = cqe->flags & IORING_CQE_F_MORE;
	if (!more)
		c->armed = 0;
	if (cqe->flags & IORING_CQE_F_BUFFER) {
		int bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
		avail--;
		if (cqe->res > 0 && !c->closing) {
			bufs[bid].next = -1;
			bufs[bid].off = 0;
			bufs[bid].len = cqe->res;
			if (c->tail >= 0)
				bufs[c->tail].next = bid;
			else
				c->head = bid;
			c->tail = bid;
			queued++;
			if (!c->sending)
				send_head(fd);
		} else {
			give_back(bid);
		}
	}
	if (cqe->res == -ENOBUFS && !more && !c->closing) {
		if (!c->starved) {
			if (nstarved == capstarved) {
				capstarved = capstarved ? 2 * capstarved : 256;
				starved = realloc(starved, capstarved * sizeof *starved);
				if (!starved)
					die("realloc", errno);
			}
			starved[nstarved++] = fd;
			c->starved = 1;
		}
	} else if (cqe->res <= 0 && cqe->res != -ENOBUFS) {
		set_closing(fd);
	} else if (!more && !c->closing) {
		arm_recv(fd);
	}
	close_if_idle(fd);
}

static void on_send(int fd, struct io_uring_cqe *cqe) {
	struct conn *c = conn_of(fd);
	c->sending = 0;
	inflight--;
	struct buf *b = &bufs[c->head];
	if (cqe->res <= 0) {
		drop_queue(c);
		set_closing(fd);
		close_if_idle(fd);
		return;
	}
	b->off += cqe->res;
	if (b->off < b->len && !c->closing) {
		send_head(fd); /* short all the same: send the rest */
		return;
	}
	int bid = c->head;
	c->head = b->next;
	if (c->head < 0)
		c->tail = -1;
	queued--;
	give_back(bid);
	if (c->closing)
		drop_queue(c);
	else if (c->head >= 0)
		send_head(fd);
	close_if_idle(fd);
}

/* rearm_starved arms the receives that ENOBUFS ended, as many as there are
 * buffers back in the ring. */
static void rearm_starved(void) {
	int budget = avail; /* so that one buffer back does not re-arm them all */
	while (nstarved > 0 && budget > 0) {
		int fd = starved[--nstarved];
		struct conn *c = conn_of(fd);
		if (!c->starved)
			continue;
		c->starved = 0;
		arm_recv(fd);
		budget--;
	}
}

static void setup_ring(void) {
	static const unsigned tries[] = {
		IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
		IORING_SETUP_COOP_TASKRUN,
		0,
	};
	int ret = -EINVAL;
	for (size_t i = 0; i < sizeof tries / sizeof tries[0]; i++) {
		struct io_uring_params p = {.flags = tries[i] | IORING_SETUP_CQSIZE, .cq_entries = CQ_ENTRIES};
		ret = io_uring_queue_init_params(SQ_ENTRIES, &ring, &p);
		if (ret != -EINVAL)
			break;
	}
	if (ret < 0)
		die("io_uring_queue_init_params", -ret);

	size_t ringsize = NBUFS * sizeof(struct io_uring_buf);
	br = mmap(NULL, ringsize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bufmem = mmap(NULL, (size_t)NBUFS * BUFSIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (br == MAP_FAILED || bufmem == MAP_FAILED)
		die("mmap", errno);
	struct io_uring_buf_reg reg = {.ring_addr = (uintptr_t)br, .ring_entries = NBUFS, .bgid = BGID};
	if ((ret = io_uring_register_buf_ring(&ring, &reg, 0)) < 0)
		die("io_uring_register_buf_ring", -ret);
	io_uring_buf_ring_init(br);
	for (int i = 0; i < NBUFS; i++)
		give_back(i);
	io_uring_buf_ring_advance(br, returned);
	returned = 0;
}

int main(int argc, char **argv) {
	if (argc != 2) {
		fprintf(stderr, "usage: %s port\n", argv[0]);
		return 2;
	}
	/* Room for 10,000 connections: take the hard limit. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	int ln = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ln < 0)
		die("socket", errno);
	int one = 1;
	setsockopt(ln, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[1]))};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(ln, (struct sockaddr *)&sa, sizeof sa) < 0)
		die("bind", errno);
	if (listen(ln, 4096) < 0)
		die("listen", errno);
	setup_ring();
	arm_accept(ln);
	printf("READY\n");
	fflush(stdout);

	for (;;) {
		if (returned) {
			io_uring_buf_ring_advance(br, returned);
			avail += returned;
			returned = 0;
		}
		rearm_starved();
		/* Waiting past the sends' completions is safe only when they
		 * leave nothing to do here: no buffer queued behind a send, no
		 * receive waiting for buffers. */
		unsigned wait = queued > inflight || nstarved ? 1 : submitted + 1;
		submitted = 0;
		int ret = io_uring_submit_and_wait(&ring, wait);
		if (ret < 0 && ret != -EINTR && ret != -EBUSY)
			die("io_uring_submit_and_wait", -ret);
		unsigned head, n = 0;
		struct io_uring_cqe *cqe;
		io_uring_for_each_cqe(&ring, head, cqe) {
			uint64_t data = io_uring_cqe_get_data64(cqe);
			int fd = (int)(uint32_t)data;
			switch (data >> 32) {
			case OP_ACCEPT:
				on_accept(fd, cqe);
				break;
			case OP_RECV:
				on_recv(fd, cqe);
				break;
			case OP_SEND:
				on_send(fd, cqe);
				break;
			}
			n++;
		}
		io_uring_cq_advance(&ring, n);
	}
}
