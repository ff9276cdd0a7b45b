//go:build !linux

package netloop

import (
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/socket"
)

// keepAliveConfig sets keep-alive with an idle time through the Conn; the
// timings' option names differ outside Linux, and the socket package's
// own tests read them back. OpenBSD has no per-socket timings.
func keepAliveConfig(t *testing.T, c *Conn, fd int) {
	t.Helper()
	err := c.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: 3 * time.Second})
	if runtime.GOOS == "openbsd" {
		require.ErrorIs(t, err, socket.ErrUnsupportedOption)
		return
	}
	require.NoError(t, err)
}

// userTimeout: TCP_USER_TIMEOUT is Linux's.
func userTimeout(t *testing.T, c *Conn, fd int) {
	t.Helper()
	require.ErrorIs(t, c.SetUserTimeout(time.Second), socket.ErrUnsupportedOption)
}
