//go:build unix

package socket

import (
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// WithReusePort lets several UDP sockets bind one address (netloop gives
// each Loop its own); without it the second bind fails.
func TestUDPReusePort(t *testing.T) {
	a, err := ListenUDP("udp4", "127.0.0.1:0", WithReusePort())
	require.NoError(t, err)
	closeIt(t, a)
	b, err := ListenUDP("udp4", a.LocalAddr().String(), WithReusePort(), WithBacklog(3))
	require.NoError(t, err, "SO_REUSEPORT lets a second socket bind")
	closeIt(t, b)
	require.Equal(t, a.LocalAddr().String(), b.LocalAddr().String())

	_, err = ListenUDP("udp4", a.LocalAddr().String())
	require.ErrorIs(t, err, unix.EADDRINUSE, "without it the port is taken")
}
