//go:build linux

package socket

import (
	"net/netip"
	"os"
	"unsafe"

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

// sysAccept accepts one connection as a non-blocking, close-on-exec socket,
// and returns its peer's inet address (not valid for another family).
// Errors are raw errnos; the caller classifies them.
//
// The address is read into a buffer on the stack: unix.Accept4 allocates
// two objects on the heap per connection. A raw system call, as accept4
// on a non-blocking listener cannot block.
func sysAccept(fd int) (int, netip.AddrPort, error) {
	var rsa unix.RawSockaddrAny
	n := uint32(unix.SizeofSockaddrAny)
	nfd, _, errno := unix.RawSyscall6(unix.SYS_ACCEPT4, uintptr(fd), uintptr(unsafe.Pointer(&rsa)), uintptr(unsafe.Pointer(&n)),
		unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0, 0)
	if errno != 0 {
		return -1, netip.AddrPort{}, errno
	}
	return int(nfd), rawAddrPort(&rsa), nil
}

// localAddrPort is the socket's own inet address, as getsockname(2)
// reports it, read into a buffer on the stack (as sysAccept does).
func localAddrPort(fd int) (netip.AddrPort, error) {
	var rsa unix.RawSockaddrAny
	n := uint32(unix.SizeofSockaddrAny)
	_, _, errno := unix.RawSyscall(unix.SYS_GETSOCKNAME, uintptr(fd), uintptr(unsafe.Pointer(&rsa)), uintptr(unsafe.Pointer(&n)))
	if errno != 0 {
		return netip.AddrPort{}, os.NewSyscallError("getsockname", errno)
	}
	return rawAddrPort(&rsa), nil
}

// peerName is getpeername(2) for its answer alone: nil once the socket is
// connected, ENOTCONN before. The address is not kept, so it goes to a
// buffer on the stack.
func peerName(fd int) error {
	var rsa unix.RawSockaddrAny
	n := uint32(unix.SizeofSockaddrAny)
	_, _, errno := unix.RawSyscall(unix.SYS_GETPEERNAME, uintptr(fd), uintptr(unsafe.Pointer(&rsa)), uintptr(unsafe.Pointer(&n)))
	if errno != 0 {
		return errno
	}
	return nil
}

// rawAddrPort reads an inet address the kernel wrote; it is not valid for
// another family.
func rawAddrPort(rsa *unix.RawSockaddrAny) netip.AddrPort {
	switch rsa.Addr.Family {
	case unix.AF_INET:
		in := (*unix.RawSockaddrInet4)(unsafe.Pointer(rsa))
		return netip.AddrPortFrom(netip.AddrFrom4(in.Addr), netPort(in.Port))
	case unix.AF_INET6:
		in := (*unix.RawSockaddrInet6)(unsafe.Pointer(rsa))
		return netip.AddrPortFrom(withZone(netip.AddrFrom16(in.Addr), in.Scope_id), netPort(in.Port))
	}
	return netip.AddrPort{}
}

// netPort reads a port kept in network byte order.
func netPort(p uint16) uint16 {
	b := (*[2]byte)(unsafe.Pointer(&p))
	return uint16(b[0])<<8 | uint16(b[1])
}
