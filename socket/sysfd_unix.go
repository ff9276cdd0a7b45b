//go:build unix && !linux

package socket

import (
	"net/netip"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Outside Linux the flags are set after the descriptor exists, as package
// net does on darwin. Holding syscall.ForkLock for reading from creation to
// FD_CLOEXEC keeps os/exec (which takes it for writing around fork) from
// leaking the descriptor into a child in between. O_NONBLOCK does not
// matter to a child, so it is set after the lock is released.

const acceptFunc = "accept"

// sysSocket opens a non-blocking, close-on-exec socket.
func sysSocket(family, sotype, proto int) (int, error) {
	syscall.ForkLock.RLock()
	fd, err := unix.Socket(family, sotype, proto)
	if err == nil {
		unix.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return -1, os.NewSyscallError("fcntl", err)
	}
	return fd, nil
}

// sysSocketpair opens a non-blocking, close-on-exec socket pair.
func sysSocketpair(family, sotype, proto int) ([2]int, error) {
	syscall.ForkLock.RLock()
	fds, err := unix.Socketpair(family, sotype, proto)
	if err == nil {
		unix.CloseOnExec(fds[0])
		unix.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return [2]int{-1, -1}, os.NewSyscallError("socketpair", err)
	}
	for _, fd := range fds {
		if err := unix.SetNonblock(fd, true); err != nil {
			unix.Close(fds[0])
			unix.Close(fds[1])
			return [2]int{-1, -1}, os.NewSyscallError("fcntl", err)
		}
	}
	return fds, nil
}

// sysAccept accepts one connection as a non-blocking, close-on-exec socket.
// Errors from accept itself are raw errnos; the caller classifies them.
func sysAccept(fd int) (int, netip.AddrPort, error) {
	syscall.ForkLock.RLock()
	nfd, sa, err := unix.Accept(fd)
	if err == nil {
		unix.CloseOnExec(nfd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return -1, netip.AddrPort{}, err
	}
	if err := unix.SetNonblock(nfd, true); err != nil {
		unix.Close(nfd)
		return -1, netip.AddrPort{}, os.NewSyscallError("fcntl", err)
	}
	return nfd, addrPort(sa), nil
}

// localAddrPort is the socket's own inet address, as getsockname(2)
// reports it.
func localAddrPort(fd int) (netip.AddrPort, error) {
	sa, err := localName(fd)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return addrPort(sa), nil
}

// peerName is getpeername(2) for its answer alone: nil once the socket is
// connected, ENOTCONN before.
func peerName(fd int) error {
	_, err := unix.Getpeername(fd)
	return err
}
