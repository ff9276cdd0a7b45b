//go:build darwin || aix

package sys

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// nonblockingPipe opens a pipe whose ends are non-blocking and close-on-exec.
// These systems have no pipe2, so, like package os, it holds ForkLock while
// the descriptors are not yet close-on-exec, lest a concurrent fork+exec
// leak them into a child.
func nonblockingPipe() ([2]int, error) {
	var p [2]int
	syscall.ForkLock.RLock()
	err := unix.Pipe(p[:])
	if err == nil {
		unix.CloseOnExec(p[0])
		unix.CloseOnExec(p[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return p, os.NewSyscallError("pipe", err)
	}
	for _, fd := range p {
		if err := unix.SetNonblock(fd, true); err != nil {
			unix.Close(p[0])
			unix.Close(p[1])
			return p, os.NewSyscallError("fcntl(O_NONBLOCK)", err)
		}
	}
	return p, nil
}
