package netloop

import (
	"fmt"
	"net"
	"time"

	"github.com/unipoll/unipoll/socket"
)

// The socket options of a Conn's Stream, reachable from the Conn. Each
// forwards to the Stream's method of the same name (see
// socket.TCPConn's), and fails with an error matching
// socket.ErrUnsupportedOption when the Stream has none (a Unix socket has
// no TCP_NODELAY, keep-alive, linger or user timeout). They are
// setsockopt calls under the socket's own lock, so they may be called
// from any goroutine, before, during and after the Conn's calls; on a
// closed Conn they fail with an error matching ErrClosed.
//
// SetLinger(0) makes every close of the Conn a reset, also Close's after
// its queue is written; the Conn sets it by itself when a close discards
// output (see Conn).

// SetNoDelay sets TCP_NODELAY (socket.TCPConn.SetNoDelay).
func (c *Conn) SetNoDelay(noDelay bool) error {
	s, err := streamWith[interface{ SetNoDelay(bool) error }](c, "SetNoDelay")
	if err != nil {
		return err
	}
	return s.SetNoDelay(noDelay)
}

// SetKeepAlive turns TCP keep-alive probes on or off
// (socket.TCPConn.SetKeepAlive).
func (c *Conn) SetKeepAlive(on bool) error {
	s, err := streamWith[interface{ SetKeepAlive(bool) error }](c, "SetKeepAlive")
	if err != nil {
		return err
	}
	return s.SetKeepAlive(on)
}

// SetKeepAliveConfig sets keep-alive and its timings
// (socket.TCPConn.SetKeepAliveConfig).
func (c *Conn) SetKeepAliveConfig(cfg net.KeepAliveConfig) error {
	s, err := streamWith[interface {
		SetKeepAliveConfig(net.KeepAliveConfig) error
	}](c, "SetKeepAliveConfig")
	if err != nil {
		return err
	}
	return s.SetKeepAliveConfig(cfg)
}

// SetLinger sets what the close does with data the kernel has not sent
// (socket.TCPConn.SetLinger); 0 resets.
func (c *Conn) SetLinger(sec int) error {
	s, err := streamWith[linger](c, "SetLinger")
	if err != nil {
		return err
	}
	return s.SetLinger(sec)
}

// SetReadBuffer sets the kernel's receive buffer size (SO_RCVBUF).
func (c *Conn) SetReadBuffer(bytes int) error {
	s, err := streamWith[interface{ SetReadBuffer(int) error }](c, "SetReadBuffer")
	if err != nil {
		return err
	}
	return s.SetReadBuffer(bytes)
}

// SetWriteBuffer sets the kernel's send buffer size (SO_SNDBUF).
func (c *Conn) SetWriteBuffer(bytes int) error {
	s, err := streamWith[interface{ SetWriteBuffer(int) error }](c, "SetWriteBuffer")
	if err != nil {
		return err
	}
	return s.SetWriteBuffer(bytes)
}

// SetUserTimeout sets TCP_USER_TIMEOUT, how long sent data may stay
// unacknowledged (socket.TCPConn.SetUserTimeout; Linux only). It bounds
// what WriteTimeout cannot see: output the kernel holds.
func (c *Conn) SetUserTimeout(d time.Duration) error {
	s, err := streamWith[interface{ SetUserTimeout(time.Duration) error }](c, "SetUserTimeout")
	if err != nil {
		return err
	}
	return s.SetUserTimeout(d)
}

// streamWith is the Conn's Stream as an S, or the error for a zero Conn
// or a Stream without op.
func streamWith[S any](c *Conn, op string) (S, error) {
	var none S
	if c.zero() {
		return none, errZeroConn
	}
	s, ok := c.s.(S)
	if !ok {
		return none, fmt.Errorf("netloop: %s on a %T: %w", op, c.s, socket.ErrUnsupportedOption)
	}
	return s, nil
}
