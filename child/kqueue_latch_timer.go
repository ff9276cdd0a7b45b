//go:build netbsd || openbsd

package child

import (
	"os"

	"golang.org/x/sys/unix"
)

// setLatch adds a one-shot EVFILT_TIMER of 1ms to the private kqueue (x/sys
// has no EVFILT_USER here). Nothing ever reads it, so once it has fired it
// stays pending and the kqueue readable. Until it fires (1ms after the
// exit was read) a level registration may miss a Poll call.
func setLatch(kq int) error {
	var ch [1]unix.Kevent_t
	unix.SetKevent(&ch[0], latchIdent, unix.EVFILT_TIMER, unix.EV_ADD|unix.EV_ONESHOT)
	ch[0].Data = 1 // milliseconds
	if _, err := kevent(kq, ch[:], nil); err != nil {
		return os.NewSyscallError("kevent(EVFILT_TIMER)", err)
	}
	return nil
}

// latchIdent is the latch's ident; timer idents are a namespace of their
// own.
const latchIdent = 1
