//go:build !linux

package netloop

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/socket"
)

// keepIdle: the option's name and unit differ outside Linux; the socket
// package's own tests check the timings there.
func keepIdle(t *testing.T, fd, secs int) {}

// userTimeout: TCP_USER_TIMEOUT is Linux's.
func userTimeout(t *testing.T, c *Conn, fd int) {
	t.Helper()
	require.ErrorIs(t, c.SetUserTimeout(time.Second), socket.ErrUnsupportedOption)
}
