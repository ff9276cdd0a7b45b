//go:build linux

package socket

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Small reads and writes are raw system calls: the runtime is not told
// (no entersyscall and exitsyscall), so the goroutine keeps its processor
// (P) through the call as through any other instruction.
//
// Why: an ordinary system call puts the P in the syscall state, which the
// runtime's sysmon watches: it takes a P whose call has outlasted its 20µs
// check (and then checks every 20µs again), and a system call made while
// it sleeps deeply wakes it. With GOMAXPROCS=1 (a server pinned to a
// core) that kept sysmon waking thousands of times a second, each time a
// context switch on the server's core, some of them preempting the server
// on its way out of a read or write. Measured on the echo and RESP
// benchmarks (bench/WAITING.md): context switches per message 1.3 to 5
// times fewer, CPU per message lower at most points, by up to 8%.
//
// Why it is safe: every descriptor of this package is non-blocking (made
// so, or switched on adoption), so the call cannot wait; it only copies,
// and rawMax bounds the copy to a few microseconds, the time the runtime
// cannot preempt the goroutine or stop the world. Larger calls stay
// ordinary ones. A caller that clears O_NONBLOCK on a socket's open file
// description (through a duplicate) breaks this: a raw read with nothing
// to read would then hold its P until data came, stalling the goroutines
// queued on it and any garbage collection. Adopt and File document that
// the description stays non-blocking.

// One thing is lost: x/sys/unix tells the race detector that read(2)
// wrote the buffer and write(2) read it, and the raw calls do not, so a
// race on a buffer passed to Read or Write shows only if the caller's
// own accesses race. The raw path stays in race builds all the same, so
// that the tests (which run under -race) run the path users get.

// rawMax is the largest read or write made as a raw system call: 64 KiB
// copies in a few microseconds.
const rawMax = 64 << 10

// sysRead is read(2) on a non-blocking descriptor. A failed call counts 0
// bytes.
func sysRead(fd int, b []byte) (int, error) {
	if len(b) == 0 || len(b) > rawMax {
		return noNegative(unix.Read(fd, b))
	}
	return rawCall(unix.SYS_READ, fd, b)
}

// sysWrite is write(2) on a non-blocking descriptor. A failed call counts
// 0 bytes.
func sysWrite(fd int, b []byte) (int, error) {
	if len(b) == 0 || len(b) > rawMax {
		return noNegative(unix.Write(fd, b))
	}
	return rawCall(unix.SYS_WRITE, fd, b)
}

// rawCall makes read(2) or write(2) (trap) on b, which is not empty, as a
// raw system call.
func rawCall(trap uintptr, fd int, b []byte) (int, error) {
	r, _, errno := unix.RawSyscall(trap, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}
