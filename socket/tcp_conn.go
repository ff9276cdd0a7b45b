//go:build unix

package socket

import (
	"net"
	"net/netip"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// TCPConn is a non-blocking TCP connection. Read and Write may be used from
// different goroutines at once; each is safe for concurrent use, though two
// concurrent Writes may interleave their bytes, as with any socket.
//
// The zero value, like a nil *TCPConn, is a conn that was never opened:
// every method with an error result returns an error matching ErrNotOpen
// (and ErrClosed), Register refuses it, Fd is -1 and the addresses are nil.
// Get a TCPConn from DialTCP, TCPListener.Accept, AdoptTCPConn or
// FileTCPConn.
type TCPConn struct {
	s sock
	// The addresses, as values (no allocation per connection); LocalAddr
	// and RemoteAddr make a *net.TCPAddr of them when asked.
	local, remote netip.AddrPort
	// connErr keeps the first failure of the connect that ConnectError,
	// Read or Write saw: the kernel tells it once, and a caller may ask
	// more than once (tcp_dial.go).
	connErr atomic.Pointer[error]
	dial    *dialing // DialTCP's connect until the conn is seen connected; nil if not dialed
}

// newTCPConn wraps a connected (or connecting) descriptor, taking ownership
// of it: on error it is closed. remote may be nil; it is then asked of the
// kernel.
func newTCPConn(fd int, remote netip.AddrPort) (*TCPConn, error) {
	local, err := localAddrPort(fd)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	if !remote.IsValid() {
		if rsa, err := unix.Getpeername(fd); err == nil {
			remote = addrPort(rsa)
		}
	}
	return &TCPConn{s: newSock(fd), local: local, remote: remote}, nil
}

// sockOf returns c's sock, or nil (a sock that is not open) for a nil c.
func (c *TCPConn) sockOf() *sock {
	if c == nil {
		return nil
	}
	return &c.s
}

// Read reads what is available, up to len(b) bytes. It returns
// ErrWouldBlock when nothing is, and io.EOF once the peer has shut down its
// side and everything before that has been read.
//
// Under Edge, a read pass may end at ErrWouldBlock or at a short read
// (0 < n < len(b)): the socket was drained then, and data arriving later is
// a new event, unless the event reported Hup (read on to io.EOF). A pass
// that ends after a full buffer must read again, or wait for an event that
// may never come. See the package doc.
func (c *TCPConn) Read(b []byte) (int, error) {
	n, err := readStream(c.sockOf(), b)
	if c != nil && c.dial != nil && c.dial.state.Load() != dialConnected {
		return c.dialed("read", n, err)
	}
	return n, err
}

// Write writes b, or as much of it as fits in the socket's send buffer: a
// short write returns the count and ErrWouldBlock, and the caller sends the
// rest on the next Writable event. Under Edge, only ErrWouldBlock ends a
// write pass: the next Writable event comes after one.
func (c *TCPConn) Write(b []byte) (int, error) {
	n, err := write(c.sockOf(), b)
	if c != nil && c.dial != nil && c.dial.state.Load() != dialConnected {
		return c.dialed("write", n, err)
	}
	return n, err
}

// CloseWrite shuts down the sending side: the peer reads io.EOF once it has
// read everything sent before, and may still send back; this side can still
// read.
func (c *TCPConn) CloseWrite() error { return shutdown(c.sockOf(), unix.SHUT_WR) }

// CloseRead shuts down the receiving side.
func (c *TCPConn) CloseRead() error { return shutdown(c.sockOf(), unix.SHUT_RD) }

// SetNoDelay sets TCP_NODELAY: true sends small writes at once instead of
// coalescing them (Nagle's algorithm). New connections have the system
// default, which is false (coalescing on), unlike package net.
func (c *TCPConn) SetNoDelay(noDelay bool) error {
	v := 0
	if noDelay {
		v = 1
	}
	return setsockoptInt(c.sockOf(), unix.IPPROTO_TCP, unix.TCP_NODELAY, v)
}

// LocalAddr is the conn's own address (a *net.TCPAddr), or nil for a conn
// that was never opened. It stays available after Close.
func (c *TCPConn) LocalAddr() net.Addr {
	if c == nil {
		return nil
	}
	return netAddr(tcpAddrOf(c.local))
}

// RemoteAddr is the peer's address (a *net.TCPAddr): the address dialed, or
// the one the connection was accepted from; nil if there is none (an
// adopted descriptor that is not connected, a conn never opened). It stays
// available after Close.
func (c *TCPConn) RemoteAddr() net.Addr {
	if c == nil {
		return nil
	}
	return netAddr(tcpAddrOf(c.remote))
}

// Fd returns the descriptor, or -1 after Close (and for a conn never
// opened). The conn keeps owning it: do not close it, and do not use the
// number after Close.
func (c *TCPConn) Fd() int { return c.sockOf().Sysfd() }

// Completion reports whether the conn's I/O goes through its Poll's
// backend (poll.Stream: Config.Completion on the "uring" backend) rather
// than through its descriptor: bytes the backend received wait in user
// space, and writes queue there. Code that reads, writes or splices Fd
// itself would then take bytes out of order; the conn's own Read and
// Write are always right. Once true it stays true until Close.
func (c *TCPConn) Completion() bool { return c.sockOf().HasStream() }

// CompletionBuffered reports, in completion mode (Completion), the bytes
// the backend received that Read has not returned (unread) and the bytes
// Write queued that the kernel has not taken (unsent); with the socket's
// own queues (SIOCINQ, SIOCOUTQ) they account for every byte. Both are 0
// otherwise.
func (c *TCPConn) CompletionBuffered() (unread, unsent int) { return streamBuffered(c.sockOf()) }

// CompletionFlushed reports, in completion mode (Completion), whether
// every byte Write queued has gone to the kernel (or the sending side
// failed, dropping them: Write returns the error); when some wait, the
// conn's next event is a Writable that comes once they all have (also
// under Edge). Code that closes after its output waits for it, as
// netloop's Conns do: closing earlier leaves the rest to later Polls.
// Always true otherwise.
func (c *TCPConn) CompletionFlushed() bool { return streamFlushed(c.sockOf()) }

// Close deregisters the conn from its Poll, if any, and closes it. Closing
// twice returns an error matching ErrClosed.
func (c *TCPConn) Close() error { return c.sockOf().Close() }
