//go:build darwin || freebsd || dragonfly

package sys

import (
	"os"

	"golang.org/x/sys/unix"
)

// userWaker wakes kevent through an EVFILT_USER filter registered with
// EV_CLEAR: NOTE_TRIGGER makes it fire once, and harvesting it resets it, so
// there is nothing to drain.
type userWaker struct{}

// userWakerIdent is the waker filter's ident. EVFILT_USER idents are a
// namespace of their own, apart from descriptors.
const userWakerIdent = 0

func newKqWaker() (kqWaker, error) { return userWaker{}, nil }

// userChange submits one EVFILT_USER change. Its udata is nil, so a plain
// Kevent_t on the stack is safe.
func userChange(kq, flags int, fflags uint32) error {
	var k unix.Kevent_t
	unix.SetKevent(&k, userWakerIdent, unix.EVFILT_USER, flags)
	k.Fflags = fflags
	changes := [1]unix.Kevent_t{k}
	return ignoringEINTR(func() error {
		_, err := unix.Kevent(kq, changes[:], nil, nil)
		return err
	})
}

func (userWaker) register(kq int) error {
	if err := userChange(kq, unix.EV_ADD|unix.EV_CLEAR, 0); err != nil {
		return os.NewSyscallError("kevent(EVFILT_USER)", err)
	}
	return nil
}

func (userWaker) isWaker(k *unix.Kevent_t) bool {
	return int(k.Filter) == unix.EVFILT_USER && k.Ident == userWakerIdent
}

func (userWaker) wake(kq int) error {
	if err := userChange(kq, 0, unix.NOTE_TRIGGER); err != nil {
		return os.NewSyscallError("kevent(NOTE_TRIGGER)", err)
	}
	return nil
}

func (userWaker) drain() {}

func (userWaker) close() error { return nil }
