package netloop

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/socket"
)

// sockInt reads an integer socket option of fd from the kernel.
func sockInt(t *testing.T, fd, level, opt int) int {
	t.Helper()
	v, err := unix.GetsockoptInt(fd, level, opt)
	require.NoError(t, err)
	return v
}

// The option setters of a TCP Conn reach its socket, from a goroutine
// other than the Loop's while the Loop runs: each is read back from the
// kernel.
func TestConnOptionsTCP(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	start(t, l, nil)
	s, _ := tcpClientPair(t)
	fd := s.Fd()
	c, err := Add(l, s, newEcho(), Config{})
	require.NoError(t, err)

	require.NoError(t, c.SetNoDelay(true))
	require.Equal(t, 1, sockInt(t, fd, unix.IPPROTO_TCP, unix.TCP_NODELAY))
	require.NoError(t, c.SetNoDelay(false))
	require.Zero(t, sockInt(t, fd, unix.IPPROTO_TCP, unix.TCP_NODELAY))

	require.NoError(t, c.SetKeepAlive(true))
	require.Equal(t, 1, sockInt(t, fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE))
	require.NoError(t, c.SetKeepAlive(false))
	require.Zero(t, sockInt(t, fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE))
	keepAliveConfig(t, c, fd)
	require.Equal(t, 1, sockInt(t, fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE))

	l0, err := unix.GetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER)
	require.NoError(t, err)
	require.Zero(t, l0.Onoff, "linger is off until asked for")
	require.NoError(t, c.SetLinger(5))
	l5, err := unix.GetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER)
	require.NoError(t, err)
	require.Equal(t, unix.Linger{Onoff: 1, Linger: 5}, *l5)

	for _, o := range []struct {
		opt int
		set func(int) error
	}{{unix.SO_RCVBUF, c.SetReadBuffer}, {unix.SO_SNDBUF, c.SetWriteBuffer}} {
		const size = 96 << 10
		before := sockInt(t, fd, unix.SOL_SOCKET, o.opt)
		require.NoError(t, o.set(size))
		after := sockInt(t, fd, unix.SOL_SOCKET, o.opt)
		// The kernel rounds (Linux doubles) and caps the size: it moved
		// from the default toward size.
		require.NotEqual(t, before, after, "option %d unchanged", o.opt)
		require.GreaterOrEqual(t, after, min(size, before))
		require.ErrorIs(t, o.set(0), socket.ErrInvalidOption)
	}

	userTimeout(t, c, fd)

	// On a closed Conn they fail as the socket does.
	require.NoError(t, c.Async(func(c *Conn) { c.Close() }))
	eventually(t, "the Conn to close", func() bool { return Conns(l) == 0 })
	require.ErrorIs(t, c.SetNoDelay(true), ErrClosed)
}

// A Unix Conn has buffer sizes but no TCP options: those fail with
// socket.ErrUnsupportedOption, as every option does on a zero Conn with
// ErrInvalidArgument.
func TestConnOptionsUnix(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	start(t, l, nil)
	s, _ := clientPair(t)
	c, err := Add(l, s, newEcho(), Config{})
	require.NoError(t, err)
	before := sockInt(t, s.Fd(), unix.SOL_SOCKET, unix.SO_SNDBUF)
	require.NoError(t, c.SetWriteBuffer(before*2))
	require.NotEqual(t, before, sockInt(t, s.Fd(), unix.SOL_SOCKET, unix.SO_SNDBUF))
	require.NoError(t, c.SetReadBuffer(64<<10))

	tcpOnly := map[string]error{
		"SetNoDelay":         c.SetNoDelay(true),
		"SetKeepAlive":       c.SetKeepAlive(true),
		"SetKeepAliveConfig": c.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true}),
		"SetLinger":          c.SetLinger(0),
		"SetUserTimeout":     c.SetUserTimeout(time.Second),
	}
	for name, err := range tcpOnly {
		require.ErrorIs(t, err, socket.ErrUnsupportedOption, name)
		require.ErrorContains(t, err, name)
	}

	var zero Conn
	require.ErrorIs(t, zero.SetNoDelay(true), ErrInvalidArgument)
	require.ErrorIs(t, (*Conn)(nil).SetReadBuffer(1), ErrInvalidArgument)
}
