//go:build unix

package socket

import (
	"errors"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// UnixListener is a non-blocking Unix-domain stream listening socket. It is
// readable when a connection is waiting. Its methods are safe for
// concurrent use.
//
// The zero value, like a nil *UnixListener, is a listener that was never
// opened: every method with an error result returns an error matching
// ErrNotOpen (and ErrClosed), Register refuses it, Fd is -1 and Addr is
// nil. Get a UnixListener from ListenUnix.
type UnixListener struct {
	s    sock
	path string // never empty, except in a listener never opened
	// The socket file this listener created, identified by device and
	// inode, so that Close removes that file and not one another process
	// has put at the same path since.
	created bool
	dev     uint64
	ino     uint64
}

// ListenUnix opens a listener on the socket file path, which must not exist
// yet: a stale file left by an earlier process is the caller's to remove. On
// Linux a path starting with "@" names an abstract socket, which has no file.
// Close removes the socket file, if this listener created it.
func ListenUnix(path string) (*UnixListener, error) {
	l, err := listenUnix(path)
	if err != nil {
		return nil, opError("listen unix", path, err)
	}
	return l, nil
}

func listenUnix(path string) (*UnixListener, error) {
	if path == "" {
		return nil, ErrInvalidAddr
	}
	fd, err := sysSocket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("bind", err)
	}
	l := &UnixListener{s: newSock(fd), path: path}
	var st unix.Stat_t
	if path[0] != '@' && unix.Lstat(path, &st) == nil {
		l.created, l.dev, l.ino = true, uint64(st.Dev), uint64(st.Ino)
	}
	if err := unix.Listen(fd, defaultBacklog); err != nil {
		return nil, errors.Join(os.NewSyscallError("listen", err), l.Close())
	}
	return l, nil
}

// sockOf returns l's sock, or nil (a sock that is not open) for a nil l.
func (l *UnixListener) sockOf() *sock {
	if l == nil {
		return nil
	}
	return &l.s
}

// Accept takes one pending connection, non-blocking and close-on-exec, or
// returns ErrWouldBlock when none is pending. See TCPListener.Accept.
func (l *UnixListener) Accept() (*UnixConn, error) {
	fd, _, err := accept(l.sockOf())
	if err != nil {
		return nil, acceptError(err, l.Addr())
	}
	// The peer of a connected client is normally unnamed; the local name
	// is the listener's.
	return newUnixConn(fd, l.path, ""), nil
}

// Addr is the listener's address (a *net.UnixAddr), or nil for a listener
// never opened. It stays available after Close.
func (l *UnixListener) Addr() net.Addr {
	if l == nil || l.path == "" {
		return nil
	}
	return &net.UnixAddr{Name: l.path, Net: "unix"}
}

// Fd returns the descriptor, or -1 after Close (and for a listener never
// opened). The listener keeps owning it: do not close it, and do not use
// the number after Close.
func (l *UnixListener) Fd() int { return l.sockOf().Sysfd() }

// Close deregisters the listener from its Poll, if any, closes it, and
// removes the socket file if this listener created it and it is still the
// same file. Closing twice returns an error matching ErrClosed.
func (l *UnixListener) Close() error {
	err := l.sockOf().Close()
	if errors.Is(err, ErrClosed) {
		// Closed before (the file was dealt with then), or never opened.
		return err
	}
	// Any other error still closed the descriptor; the file goes too.
	return errors.Join(err, l.unlink())
}

// unlink removes the socket file if this listener created it.
func (l *UnixListener) unlink() error {
	if !l.created {
		return nil
	}
	var st unix.Stat_t
	if unix.Lstat(l.path, &st) != nil || uint64(st.Dev) != l.dev || uint64(st.Ino) != l.ino {
		return nil // gone, or replaced by someone else's: not ours to remove
	}
	if err := unix.Unlink(l.path); err != nil && err != unix.ENOENT {
		return opError("close", l.path, os.NewSyscallError("unlink", err))
	}
	return nil
}
