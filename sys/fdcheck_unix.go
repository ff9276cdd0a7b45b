//go:build unix

package sys

import (
	"os"

	"golang.org/x/sys/unix"
)

// fdOpen reports whether fd is an open descriptor. Selectors that keep
// their own table (poll(2), kqueue) use it to answer as epoll_ctl does,
// where the kernel would not tell.
func fdOpen(fd int) bool {
	if fd < 0 {
		return false
	}
	_, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	return err != unix.EBADF
}

// missing is the error for an operation on a descriptor that has no entry:
// EBADF if it is not even open, ENOENT if it is.
func missing(op string, fd int) error {
	if !fdOpen(fd) {
		return os.NewSyscallError(op, unix.EBADF)
	}
	return os.NewSyscallError(op, unix.ENOENT)
}
