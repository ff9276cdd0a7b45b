//go:build unix && !linux && !freebsd && !netbsd && !openbsd && !dragonfly

package child

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// pipeFds makes a close-on-exec pipe where pipe2 is missing (darwin): with
// syscall.ForkLock held for reading, as package os does, so that no child
// is started by another goroutine between pipe and the close-on-exec flag.
func pipeFds() (r, w int, err error) {
	var p [2]int
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	if err := unix.Pipe(p[:]); err != nil {
		return -1, -1, err
	}
	unix.CloseOnExec(p[0])
	unix.CloseOnExec(p[1])
	return p[0], p[1], nil
}
