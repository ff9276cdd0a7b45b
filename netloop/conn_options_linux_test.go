package netloop

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// keepIdle checks the keep-alive idle time, in seconds, of fd.
func keepIdle(t *testing.T, fd, secs int) {
	t.Helper()
	require.Equal(t, secs, sockInt(t, fd, unix.IPPROTO_TCP, unix.TCP_KEEPIDLE))
	require.Equal(t, 15, sockInt(t, fd, unix.IPPROTO_TCP, unix.TCP_KEEPINTVL), "a zero Interval is package net's default")
}

// userTimeout checks Conn.SetUserTimeout against TCP_USER_TIMEOUT.
func userTimeout(t *testing.T, c *Conn, fd int) {
	t.Helper()
	require.NoError(t, c.SetUserTimeout(1500*time.Millisecond))
	require.Equal(t, 1500, sockInt(t, fd, unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT))
}
