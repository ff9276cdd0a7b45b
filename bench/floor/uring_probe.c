/*
 * Tells whether the io_uring floor (echo_uring.c) can build and run here:
 * it needs liburing's header and library to build, and a kernel that
 * gives it a ring with a provided buffer ring (Linux 5.19 and later, and
 * io_uring not disabled by kernel.io_uring_disabled or a seccomp filter).
 * It exits 0 when it got both, and otherwise says what failed.
 *
 *   cc -o uring_probe uring_probe.c -luring && ./uring_probe
 *
 * Written for the unipoll bench (bench/floor), which builds and runs it
 * before the floor, to skip the floor with a reason rather than fail.
 */
#include <liburing.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
	struct io_uring ring;
	int ret = io_uring_queue_init(1, &ring, 0);
	if (ret < 0) {
		fprintf(stderr, "io_uring_queue_init: %s\n", strerror(-ret));
		return 1;
	}
	void *mem;
	if (posix_memalign(&mem, 4096, 4096) != 0) {
		fprintf(stderr, "posix_memalign failed\n");
		return 1;
	}
	struct io_uring_buf_reg reg = {.ring_addr = (uintptr_t)mem, .ring_entries = 1, .bgid = 1};
	ret = io_uring_register_buf_ring(&ring, &reg, 0);
	if (ret < 0) {
		fprintf(stderr, "io_uring_register_buf_ring: %s\n", strerror(-ret));
		return 1;
	}
	io_uring_queue_exit(&ring);
	return 0;
}
