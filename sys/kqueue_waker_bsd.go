//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package sys

import "golang.org/x/sys/unix"

// kqWaker is how Wake interrupts kevent: EVFILT_USER where the system has
// it (kqueue_user.go), a pipe otherwise (kqueue_pipe.go).
type kqWaker interface {
	// register adds the waker's filter to kq.
	register(kq int) error
	// isWaker reports whether a harvested kevent is the waker's.
	isWaker(k *unix.Kevent_t) bool
	// wake makes the waker's filter fire.
	wake(kq int) error
	// drain stops the waker's filter from firing again until the next wake.
	drain()
	close() error
}
