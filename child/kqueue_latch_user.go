//go:build darwin || freebsd || dragonfly

package child

import (
	"os"

	"golang.org/x/sys/unix"
)

// setLatch adds an EVFILT_USER event to the private kqueue and triggers it.
// Nothing ever reads it, so it stays pending and the kqueue readable.
func setLatch(kq int) error {
	var ch [2]unix.Kevent_t
	unix.SetKevent(&ch[0], latchIdent, unix.EVFILT_USER, unix.EV_ADD)
	unix.SetKevent(&ch[1], latchIdent, unix.EVFILT_USER, 0)
	ch[1].Fflags = unix.NOTE_TRIGGER
	if _, err := kevent(kq, ch[:], nil); err != nil {
		return os.NewSyscallError("kevent(EVFILT_USER)", err)
	}
	return nil
}

// latchIdent is the latch's ident; EVFILT_USER idents are a namespace of
// their own.
const latchIdent = 1
