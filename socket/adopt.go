//go:build unix

package socket

import (
	"fmt"
	"net/netip"
	"os"

	"golang.org/x/sys/unix"
)

// Adoption turns a descriptor made elsewhere (inherited from a parent,
// passed over a Unix socket, taken from package net) into a socket of this
// package. The Adopt functions take the descriptor itself; the File
// functions take a duplicate, so the *os.File stays the caller's to close.
//
// Either way the descriptor is switched to non-blocking and close-on-exec.
// O_NONBLOCK belongs to the open file description, which a duplicate
// shares: the original, and any other duplicate, become non-blocking too,
// as with net.FileConn. They must stay so while the socket is open: its
// reads and writes of up to 64 KiB are raw system calls that count on not
// blocking (rawio_linux.go), and one made on a description switched back
// to blocking would hold its goroutine's processor until data came.

// AdoptTCPConn takes ownership of fd, a connected (or connecting) TCP
// socket. On error fd is left open and remains the caller's.
func AdoptTCPConn(fd int) (*TCPConn, error) {
	lsa, err := adoptCheck(fd, false, true)
	if err != nil {
		return nil, opError("adopt tcp conn", "", err)
	}
	var remote netip.AddrPort
	if rsa, err := unix.Getpeername(fd); err == nil {
		remote = addrPort(rsa)
	}
	return &TCPConn{s: newSock(fd), local: addrPort(lsa), remote: remote}, nil
}

// AdoptTCPListener takes ownership of fd, a listening TCP socket. On error
// fd is left open and remains the caller's.
func AdoptTCPListener(fd int) (*TCPListener, error) {
	lsa, err := adoptCheck(fd, true, true)
	if err != nil {
		return nil, opError("adopt tcp listener", "", err)
	}
	return &TCPListener{s: newSock(fd), addr: tcpAddr(lsa)}, nil
}

// AdoptUnixConn takes ownership of fd, a connected Unix-domain stream
// socket. On error fd is left open and remains the caller's.
func AdoptUnixConn(fd int) (*UnixConn, error) {
	lsa, err := adoptCheck(fd, false, false)
	if err != nil {
		return nil, opError("adopt unix conn", "", err)
	}
	local := unixAddr(lsa)
	remote := ""
	if rsa, err := unix.Getpeername(fd); err == nil {
		if ra := unixAddr(rsa); ra != nil {
			remote = ra.Name
		}
	}
	return newUnixConn(fd, local.Name, remote), nil
}

// FileTCPConn returns a TCPConn on a duplicate of f's descriptor; f stays
// open and the caller's to close.
func FileTCPConn(f *os.File) (*TCPConn, error) { return fromFile(f, AdoptTCPConn) }

// FileTCPListener returns a TCPListener on a duplicate of f's descriptor;
// f stays open and the caller's to close.
func FileTCPListener(f *os.File) (*TCPListener, error) { return fromFile(f, AdoptTCPListener) }

// FileUnixConn returns a UnixConn on a duplicate of f's descriptor; f stays
// open and the caller's to close.
func FileUnixConn(f *os.File) (*UnixConn, error) { return fromFile(f, AdoptUnixConn) }

// fromFile duplicates f's descriptor close-on-exec (atomically, so no fork
// can inherit the duplicate) and adopts the duplicate. It goes through
// SyscallConn rather than f.Fd, which would switch f to blocking mode.
func fromFile[T any](f *os.File, adopt func(int) (T, error)) (T, error) {
	var zero T
	if f == nil {
		return zero, opError("file", "", fmt.Errorf("%w: nil *os.File", ErrInvalidAddr))
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return zero, opError("file", f.Name(), err)
	}
	nfd := -1
	var dupErr error
	if err := rc.Control(func(fd uintptr) {
		nfd, dupErr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return zero, opError("file", f.Name(), err)
	}
	if dupErr != nil {
		return zero, opError("file", f.Name(), os.NewSyscallError("fcntl(F_DUPFD_CLOEXEC)", dupErr))
	}
	s, err := adopt(nfd)
	if err != nil {
		unix.Close(nfd)
		return zero, err
	}
	return s, nil
}

// adoptCheck checks that fd is a stream socket of an IP family (inet) or
// AF_UNIX (!inet), and then (the family being the more telling mismatch)
// that it is listening or not as asked; only then does it make fd
// non-blocking and close-on-exec, so that a refused fd is left untouched. It
// returns fd's local address.
func adoptCheck(fd int, listening, inet bool) (unix.Sockaddr, error) {
	if fd < 0 {
		return nil, fmt.Errorf("%w: descriptor %d", ErrWrongSocketType, fd)
	}
	sotype, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	if err != nil {
		// ENOTSOCK for a pipe or a file, EBADF for a closed number.
		return nil, fmt.Errorf("%w: %w", ErrWrongSocketType, os.NewSyscallError("getsockopt(SO_TYPE)", err))
	}
	if sotype != unix.SOCK_STREAM {
		return nil, fmt.Errorf("%w: socket type %d, want SOCK_STREAM", ErrWrongSocketType, sotype)
	}
	lsa, err := localName(fd)
	if err != nil {
		return nil, err
	}
	if _, isUnix := lsa.(*unix.SockaddrUnix); inet && tcpAddr(lsa) == nil {
		return nil, fmt.Errorf("%w: not an IP socket", ErrWrongSocketType)
	} else if !inet && !isUnix {
		return nil, fmt.Errorf("%w: not a Unix-domain socket", ErrWrongSocketType)
	}
	acc, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN)
	if err != nil {
		return nil, os.NewSyscallError("getsockopt(SO_ACCEPTCONN)", err)
	}
	if (acc != 0) != listening {
		if listening {
			return nil, fmt.Errorf("%w: socket is not listening", ErrWrongSocketType)
		}
		return nil, fmt.Errorf("%w: socket is listening", ErrWrongSocketType)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		return nil, os.NewSyscallError("fcntl(O_NONBLOCK)", err)
	}
	unix.CloseOnExec(fd)
	return lsa, nil
}
