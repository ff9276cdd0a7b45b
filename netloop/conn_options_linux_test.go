package netloop

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// keepAliveConfig sets keep-alive with an idle time through the Conn and
// reads the timings back.
func keepAliveConfig(t *testing.T, c *Conn, fd int) {
	t.Helper()
	require.NoError(t, c.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: 3 * time.Second, Interval: 0, Count: -1}))
	require.Equal(t, 3, sockInt(t, fd, unix.IPPROTO_TCP, unix.TCP_KEEPIDLE))
	require.Equal(t, 15, sockInt(t, fd, unix.IPPROTO_TCP, unix.TCP_KEEPINTVL), "a zero Interval is package net's default")
}

// userTimeout checks Conn.SetUserTimeout against TCP_USER_TIMEOUT.
func userTimeout(t *testing.T, c *Conn, fd int) {
	t.Helper()
	require.NoError(t, c.SetUserTimeout(1500*time.Millisecond))
	require.Equal(t, 1500, sockInt(t, fd, unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT))
}
