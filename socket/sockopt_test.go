//go:build unix

package socket

import (
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/poll"
)

// acceptFromNet listens with this package, dials with package net (a
// client nobody here wrote) and returns both ends.
func acceptFromNet(t *testing.T, w *poller) (*TCPConn, net.Conn) {
	t.Helper()
	ln, err := ListenTCP("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closeIt(t, ln)
	require.NoError(t, w.p.Register(ln, tokListener, poll.Readable, poll.Edge))
	client, err := net.DialTimeout("tcp", ln.Addr().String(), testDeadline)
	require.NoError(t, err)
	closeIt(t, client)
	w.wait(tokListener, poll.Readable)
	server, err := ln.Accept()
	require.NoError(t, err)
	closeIt(t, server)
	return server, client
}

// A close with linger 0 resets the connection: the peer's read fails with
// ECONNRESET instead of reading a clean end of stream. That is how a server
// that gives up on queued output tells the peer it did not get everything.
func TestSetLingerZeroResets(t *testing.T) {
	for _, tc := range []struct {
		sec   int
		reset bool
	}{{sec: 0, reset: true}, {sec: -1, reset: false}} {
		w := newPoller(t)
		server, client := acceptFromNet(t, w)
		require.NoError(t, server.SetLinger(tc.sec))
		l, err := unix.GetsockoptLinger(server.Fd(), unix.SOL_SOCKET, unix.SO_LINGER)
		require.NoError(t, err)
		require.Equal(t, tc.sec >= 0, l.Onoff != 0, "SO_LINGER on after SetLinger(%d)", tc.sec)
		require.NoError(t, server.Close())

		require.NoError(t, client.SetReadDeadline(time.Now().Add(testDeadline)))
		_, err = client.Read(make([]byte, 1))
		if tc.reset {
			require.ErrorIs(t, err, syscall.ECONNRESET, "SetLinger(0) then Close: the peer must see a reset")
		} else {
			require.ErrorIs(t, err, io.EOF, "SetLinger(-1) then Close: the peer sees a clean end")
		}
	}
}

func TestSetBuffers(t *testing.T) {
	w := newPoller(t)
	c, _ := tcpPair(t, w)
	u1, u2, err := Pair()
	require.NoError(t, err)
	closeIt(t, u1)
	closeIt(t, u2)
	d, err := ListenUDP("udp", "127.0.0.1:0")
	require.NoError(t, err)
	closeIt(t, d)

	const size = 96 << 10
	for _, s := range []struct {
		name     string
		fd       int
		setRead  func(int) error
		setWrite func(int) error
	}{
		{"tcp", c.Fd(), c.SetReadBuffer, c.SetWriteBuffer},
		{"unix", u1.Fd(), u1.SetReadBuffer, u1.SetWriteBuffer},
		{"udp", d.Fd(), d.SetReadBuffer, d.SetWriteBuffer},
	} {
		for _, o := range []struct {
			opt int
			set func(int) error
		}{{unix.SO_RCVBUF, s.setRead}, {unix.SO_SNDBUF, s.setWrite}} {
			before, err := unix.GetsockoptInt(s.fd, unix.SOL_SOCKET, o.opt)
			require.NoError(t, err)
			require.NoError(t, o.set(size), s.name)
			after, err := unix.GetsockoptInt(s.fd, unix.SOL_SOCKET, o.opt)
			require.NoError(t, err)
			// The kernel rounds (Linux doubles) and caps at its maximum;
			// either way the value moved from the default toward size.
			require.NotEqual(t, before, after, "%s: option %d unchanged at %d", s.name, o.opt, before)
			require.GreaterOrEqual(t, after, min(size, before), s.name)

			for _, bad := range []int{0, -1} {
				require.ErrorIs(t, o.set(bad), ErrInvalidOption, "%s: size %d", s.name, bad)
			}
		}
	}
}

func TestSockoptBadInput(t *testing.T) {
	w := newPoller(t)
	c, _ := tcpPair(t, w)
	require.ErrorIs(t, c.SetUserTimeout(-time.Second), ErrInvalidOption)
	require.ErrorIs(t, c.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: 1 << 62}), ErrInvalidOption)
	require.ErrorIs(t, c.SetLinger(1<<40), ErrInvalidOption)

	require.NoError(t, c.Close())
	for name, err := range map[string]error{
		"SetKeepAlive":       c.SetKeepAlive(true),
		"SetKeepAliveConfig": c.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true}),
		"SetLinger":          c.SetLinger(0),
		"SetReadBuffer":      c.SetReadBuffer(4096),
		"SetWriteBuffer":     c.SetWriteBuffer(4096),
	} {
		require.ErrorIs(t, err, ErrClosed, name)
		require.ErrorContains(t, err, name)
	}
	var zero TCPConn
	require.ErrorIs(t, zero.SetKeepAlive(true), ErrNotOpen)
}

func TestUnsupportedOptionMatchesStd(t *testing.T) {
	require.True(t, errors.Is(ErrUnsupportedOption, errors.ErrUnsupported))
}
