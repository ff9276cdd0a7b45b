//go:build linux

package socket

import (
	"os"

	"golang.org/x/sys/unix"
)

// Linux creates descriptors non-blocking and close-on-exec in one system
// call, so no fork can ever inherit one in between.

const acceptFunc = "accept4"

// sysSocket opens a non-blocking, close-on-exec socket.
func sysSocket(family, sotype, proto int) (int, error) {
	fd, err := unix.Socket(family, sotype|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	return fd, nil
}

// sysSocketpair opens a non-blocking, close-on-exec socket pair.
func sysSocketpair(family, sotype, proto int) ([2]int, error) {
	fds, err := unix.Socketpair(family, sotype|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return [2]int{-1, -1}, os.NewSyscallError("socketpair", err)
	}
	return fds, nil
}

// sysAccept accepts one connection as a non-blocking, close-on-exec socket.
// Errors are raw errnos; the caller classifies them.
func sysAccept(fd int) (int, unix.Sockaddr, error) {
	return unix.Accept4(fd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
}
