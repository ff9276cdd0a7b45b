//go:build linux

package sys

import (
	"encoding/binary"
	"os"

	"golang.org/x/sys/unix"
)

// eventfdWaker is the fdWaker on Linux: one non-blocking, close-on-exec
// eventfd. wake adds 1 to its counter, which makes it readable; drain reads
// the counter, which resets it to zero.
type eventfdWaker struct {
	efd int
}

func newFdWaker() (fdWaker, error) { return newEventfdWaker() }

func newEventfdWaker() (*eventfdWaker, error) {
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, os.NewSyscallError("eventfd", err)
	}
	return &eventfdWaker{efd: efd}, nil
}

func (e *eventfdWaker) fd() int { return e.efd }

func (e *eventfdWaker) wake() error { return e.add(false) }

// wakeEdge is wake for an eventfd registered edge-triggered (epoll), which
// is never drained: each write is a new edge. If the counter ever saturates
// the write fails with EAGAIN, and a saturated counter makes no new edge,
// so it is drained and written again.
func (e *eventfdWaker) wakeEdge() error { return e.add(true) }

func (e *eventfdWaker) add(edge bool) error {
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	for {
		_, err := unix.Write(e.efd, one[:])
		switch {
		case err == nil:
			return nil
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN && edge:
			e.drain()
			continue
		case err == unix.EAGAIN:
			// The counter is about to saturate, so it is readable: a
			// wake-up is pending already.
			return nil
		default:
			return os.NewSyscallError("write(eventfd)", err)
		}
	}
}

func (e *eventfdWaker) drain() {
	var buf [8]byte
	for {
		_, err := unix.Read(e.efd, buf[:])
		if err != unix.EINTR {
			return
		}
	}
}

func (e *eventfdWaker) close() error {
	if err := unix.Close(e.efd); err != nil {
		return os.NewSyscallError("close(eventfd)", err)
	}
	return nil
}
