package socket

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func tcpInt(t *testing.T, fd, level, opt int) int {
	t.Helper()
	v, err := unix.GetsockoptInt(fd, level, opt)
	require.NoError(t, err)
	return v
}

func TestSetKeepAliveConfig(t *testing.T) {
	w := newPoller(t)
	c, _ := tcpPair(t, w)
	fd := c.Fd()
	require.Zero(t, tcpInt(t, fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE), "keep-alive is off until asked for")

	require.NoError(t, c.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: 1500 * time.Millisecond, Interval: 7 * time.Second, Count: 4}))
	require.Equal(t, 1, tcpInt(t, fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE))
	require.Equal(t, 2, tcpInt(t, fd, unix.IPPROTO_TCP, unix.TCP_KEEPIDLE), "1.5 s rounds up to 2 s")
	require.Equal(t, 7, tcpInt(t, fd, unix.IPPROTO_TCP, unix.TCP_KEEPINTVL))
	require.Equal(t, 4, tcpInt(t, fd, unix.IPPROTO_TCP, unix.TCP_KEEPCNT))

	// Negative leaves a timing alone; zero takes package net's default.
	require.NoError(t, c.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: -1, Interval: 0, Count: -1}))
	require.Equal(t, 2, tcpInt(t, fd, unix.IPPROTO_TCP, unix.TCP_KEEPIDLE))
	require.Equal(t, 15, tcpInt(t, fd, unix.IPPROTO_TCP, unix.TCP_KEEPINTVL))
	require.Equal(t, 4, tcpInt(t, fd, unix.IPPROTO_TCP, unix.TCP_KEEPCNT))

	require.NoError(t, c.SetKeepAliveConfig(net.KeepAliveConfig{Enable: false, Idle: time.Hour}))
	require.Zero(t, tcpInt(t, fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE))
	require.Equal(t, 2, tcpInt(t, fd, unix.IPPROTO_TCP, unix.TCP_KEEPIDLE), "Enable false sets nothing else")

	require.NoError(t, c.SetKeepAlive(true))
	require.Equal(t, 1, tcpInt(t, fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE))
}

func TestSetUserTimeout(t *testing.T) {
	w := newPoller(t)
	c, _ := tcpPair(t, w)
	require.NoError(t, c.SetUserTimeout(1500*time.Microsecond))
	require.Equal(t, 2, tcpInt(t, c.Fd(), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT), "1.5 ms rounds up to 2 ms")
	require.NoError(t, c.SetUserTimeout(0))
	require.Zero(t, tcpInt(t, c.Fd(), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT))
}
