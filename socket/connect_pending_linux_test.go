package socket

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/testsupport"
)

// A connect that is still in progress (its SYN dropped by a full accept
// queue) is ErrWouldBlock for ConnectError, asked as after a spurious
// event, and stays so: telling an ended connection from a pending one
// (connectErrno's peek) does not mistake the handshake for either.
func TestConnectErrorInProgress(t *testing.T) {
	addr := testsupport.FullBacklog(t)
	c, err := DialTCP("tcp", addr)
	require.NoError(t, err)
	closeIt(t, c)
	for range 3 {
		require.ErrorIs(t, c.ConnectError(), ErrWouldBlock)
	}
	_, err = c.Read(make([]byte, 1))
	require.ErrorIs(t, err, ErrWouldBlock)
	require.ErrorIs(t, c.ConnectError(), ErrWouldBlock)
}
