//go:build unix

package socket

import (
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// UnixConn is a non-blocking Unix-domain stream connection. Read and Write
// may be used from different goroutines at once.
//
// The zero value, like a nil *UnixConn, is a conn that was never opened:
// every method with an error result returns an error matching ErrNotOpen
// (and ErrClosed), Register refuses it, Fd is -1 and the addresses are nil.
// Get a UnixConn from DialUnix, Pair, UnixListener.Accept, AdoptUnixConn
// or FileUnixConn.
type UnixConn struct {
	s      sock
	local  *net.UnixAddr // nil only in a conn never opened
	remote *net.UnixAddr // likewise
}

// DialUnix connects to the listener at the socket file path. A Unix-domain
// connect completes at once or fails: when the listener's queue is full it
// fails with an error matching unix.EAGAIN on Linux (ECONNREFUSED
// elsewhere), rather than waiting.
func DialUnix(path string) (*UnixConn, error) {
	c, err := dialUnix(path)
	if err != nil {
		return nil, opError("dial unix", path, err)
	}
	return c, nil
}

func dialUnix(path string) (*UnixConn, error) {
	if path == "" {
		return nil, ErrInvalidAddr
	}
	fd, err := sysSocket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		return nil, err
	}
	for {
		err = unix.Connect(fd, &unix.SockaddrUnix{Name: path})
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("connect", err)
	}
	return newUnixConn(fd, "", path), nil
}

// Pair returns the two ends of a connected Unix-domain stream socket pair,
// each non-blocking and close-on-exec: what one writes the other reads.
func Pair() (*UnixConn, *UnixConn, error) {
	fds, err := sysSocketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		return nil, nil, opError("pair", "", err)
	}
	return newUnixConn(fds[0], "", ""), newUnixConn(fds[1], "", ""), nil
}

// newUnixConn wraps a connected descriptor, taking ownership of it. An
// empty name is an unnamed end.
func newUnixConn(fd int, local, remote string) *UnixConn {
	return &UnixConn{
		s:      newSock(fd),
		local:  &net.UnixAddr{Name: local, Net: "unix"},
		remote: &net.UnixAddr{Name: remote, Net: "unix"},
	}
}

// sockOf returns c's sock, or nil (a sock that is not open) for a nil c.
func (c *UnixConn) sockOf() *sock {
	if c == nil {
		return nil
	}
	return &c.s
}

// Read reads what is available, up to len(b) bytes. It returns
// ErrWouldBlock when nothing is, and io.EOF once the peer has shut down its
// side and everything before that has been read. Under Edge, a read pass
// may end at ErrWouldBlock or at a short read, as for TCPConn.Read.
func (c *UnixConn) Read(b []byte) (int, error) { return readStream(c.sockOf(), b) }

// Write writes b, or as much as fits: a short write returns the count and
// ErrWouldBlock, and the caller sends the rest on the next Writable event.
// Under Edge, only ErrWouldBlock ends a write pass.
func (c *UnixConn) Write(b []byte) (int, error) { return write(c.sockOf(), b) }

// CloseWrite shuts down the sending side: the peer reads io.EOF once it has
// read everything sent before, and may still send back.
func (c *UnixConn) CloseWrite() error { return shutdown(c.sockOf(), unix.SHUT_WR) }

// LocalAddr is the conn's own address (a *net.UnixAddr, with an empty Name
// when unnamed, as a dialing client and both ends of a Pair are), or nil
// for a conn never opened. It stays available after Close.
func (c *UnixConn) LocalAddr() net.Addr {
	if c == nil {
		return nil
	}
	return netAddr(c.local)
}

// RemoteAddr is the peer's address (a *net.UnixAddr): the path dialed, or
// an empty Name when the peer is unnamed; nil for a conn never opened. It
// stays available after Close.
func (c *UnixConn) RemoteAddr() net.Addr {
	if c == nil {
		return nil
	}
	return netAddr(c.remote)
}

// Fd returns the descriptor, or -1 after Close (and for a conn never
// opened). The conn keeps owning it: do not close it, and do not use the
// number after Close.
func (c *UnixConn) Fd() int { return c.sockOf().Sysfd() }

// Completion reports whether the conn's I/O goes through its Poll's
// backend (poll.Stream: Config.Completion on the "uring" backend) rather
// than through its descriptor: bytes the backend received wait in user
// space, and writes queue there. Code that reads, writes or splices Fd
// itself would then take bytes out of order; the conn's own Read and
// Write are always right. Once true it stays true until Close.
func (c *UnixConn) Completion() bool { return c.sockOf().HasStream() }

// CompletionBuffered reports, in completion mode (Completion), the bytes
// the backend received that Read has not returned (unread) and the bytes
// Write queued that the kernel has not taken (unsent); with the socket's
// own queues (SIOCINQ, SIOCOUTQ) they account for every byte. Both are 0
// otherwise.
func (c *UnixConn) CompletionBuffered() (unread, unsent int) { return streamBuffered(c.sockOf()) }

// CompletionFlushed reports, in completion mode (Completion), whether
// every byte Write queued has gone to the kernel (or the sending side
// failed, dropping them: Write returns the error); when some wait, the
// conn's next event is a Writable that comes once they all have (also
// under Edge). Code that closes after its output waits for it, as
// netloop's Conns do: closing earlier leaves the rest to later Polls.
// Always true otherwise.
func (c *UnixConn) CompletionFlushed() bool { return streamFlushed(c.sockOf()) }

// Close deregisters the conn from its Poll, if any, and closes it. Closing
// twice returns an error matching ErrClosed.
func (c *UnixConn) Close() error { return c.sockOf().Close() }
