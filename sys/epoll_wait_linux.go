//go:build linux

package sys

import (
	"errors"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// How an epoll Select that may block waits (Options.Wait: WaitLook,
// WaitBlock, WaitPark).
//
// A thread blocked in an ordinary system call costs the Go runtime: sysmon
// sees the processor (P) held by a system call for more than 20µs, retakes
// it and hands it to another thread, and the blocked thread must get one
// back (futex) when the call returns; under a steady load that is a
// hand-off per wake-up. The Go runtime's own netpoller parks goroutines
// without holding any thread or P. The modes:
//
//   - WaitBlock: epoll_wait with the timeout, in a blocking system call.
//   - WaitLook (the default): a non-blocking epoll_wait first, as a raw
//     system call that cannot block, so the runtime need not be told; only
//     if it finds nothing, block as WaitBlock does. It saves the runtime's
//     system-call bookkeeping whenever events are already there, and costs
//     one more system call when they are not; a busy Poll almost never
//     finds its look empty (the echo server of bench/: 0.01-0.02 blocking
//     waits per message), and bench/WAITING.md has the measurements.
//     Between an empty look and the block it yields (runtime.Gosched):
//     a goroutine that this pass made runnable (a handler's channel send,
//     a TLS handshake fed its bytes) sits in this P's queue, and would
//     otherwise wait while the thread sleeps holding the P, until sysmon
//     retakes it, which takes from 20µs to 10ms. The yield costs about
//     0.2µs when nothing else is runnable, next to a blocking wait's
//     several; it took TLS handshakes from 1,350-1,575 to 1,674-1,689 a
//     second with a Loop serving them (bench/GAPS.md).
//   - WaitPark: the same look first; if it finds nothing, park the goroutine
//     on the runtime's netpoller, with the epoll descriptor itself
//     registered there as a pollable file (an epoll descriptor is readable
//     while its ready list is not empty) and a read deadline for the
//     timeout. A waiting Poll holds no thread at all, and context switches
//     fall under load; a wake-up pays a hop through the netpoller (about
//     1µs more latency here), and a parked poller sleeps in futex, not in
//     epoll_pwait. Measured, not the default.

// look is epoll_wait with a zero timeout as a raw system call: it cannot
// block, so the runtime need not be told (no entersyscall and exitsyscall,
// no chance for sysmon to retake the P).
func (s *epollSelector) look(buf []unix.EpollEvent) (int, error) {
	s.waits.Add(1)
	return lookNow(s.epfd, buf)
}

func lookNow(epfd int, buf []unix.EpollEvent) (int, error) {
	r, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd),
		uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}

// openPark registers epfd with the Go runtime's netpoller. os.NewFile
// does so for a descriptor in non-blocking mode (O_NONBLOCK changes
// nothing for epoll_wait itself, which only obeys its timeout). It reports
// false, leaving epfd as it was, if the runtime would not take it.
func (s *epollSelector) openPark() bool {
	if err := unix.SetNonblock(s.epfd, true); err != nil {
		return false
	}
	f := os.NewFile(uintptr(s.epfd), "epoll")
	raw, err := f.SyscallConn()
	if err == nil {
		// A deadline can be set only on a descriptor the netpoller took.
		err = f.SetReadDeadline(time.Time{})
	}
	if err != nil {
		// Not pollable: let go of the File without closing epfd. A
		// duplicate shares the open file description, and with it every
		// registration made so far.
		if fd, derr := unix.FcntlInt(uintptr(s.epfd), unix.F_DUPFD_CLOEXEC, 0); derr == nil {
			_ = f.Close()
			s.epfd = fd
		}
		return false
	}
	s.file, s.raw = f, raw
	return true
}

// park waits on the runtime's netpoller until epfd has something to
// report or dl passes (then it returns 0 events). RawConn.Read calls the
// function first, then parks the goroutine until the netpoller sees epfd
// readable, and calls it again: a non-blocking epoll_wait each time. An
// event that arrives after a look that found nothing queues itself on
// epfd's ready list, which makes epfd readable and wakes the parked
// goroutine; one that arrived before is found by the look.
func (s *epollSelector) park(buf []unix.EpollEvent, dl deadline) (int, error) {
	want := time.Time{}
	if !dl.forever {
		want = dl.at
	}
	if want != s.deadline {
		if err := s.file.SetReadDeadline(want); err != nil {
			return 0, err
		}
		s.deadline = want
	}
	var n int
	var werr error
	err := s.raw.Read(func(fd uintptr) bool {
		for {
			s.waits.Add(1)
			n, werr = lookNow(int(fd), buf)
			if werr != unix.EINTR {
				return n > 0 || werr != nil
			}
		}
	})
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return n, werr
}
