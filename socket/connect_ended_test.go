//go:build unix

package socket

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/poll"
)

// A dialed conn that connected, and whose connection then ended before
// anyone asked ConnectError (it reported Writable, nobody looked): the
// connect succeeded, so ConnectError says nil, not ErrWouldBlock ("still
// connecting") nor the end as if it were the connect's failure, and what
// ended the connection is still what Read reports next: the reset after
// a reset, although ConnectError's SO_ERROR took the kernel's only report
// of it.
func TestConnectErrorAfterPeerEnded(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(t *testing.T, w *poller, c, server *TCPConn)
		want error // what Read says then
	}{
		{"close", func(t *testing.T, _ *poller, _, server *TCPConn) { require.NoError(t, server.Close()) }, io.EOF},
		{"reset", func(t *testing.T, _ *poller, _, server *TCPConn) { resetClose(t, server) }, unix.ECONNRESET},
		{"closed both ways", func(t *testing.T, _ *poller, c, server *TCPConn) {
			// The client's socket is CLOSE, with no error: no peer name.
			require.NoError(t, c.CloseWrite())
			require.NoError(t, server.Close())
		}, io.EOF},
		{"reset taken by another", func(t *testing.T, w *poller, c, server *TCPConn) {
			resetClose(t, server)
			require.NoError(t, w.p.Reregister(c, tokClient, poll.Error, poll.Level))
			w.wait(tokClient, poll.Error)
			// Someone reading SO_ERROR on the descriptor takes the report,
			// which leaves a CLOSE socket with no error and no peer name.
			soerr, err := unix.GetsockoptInt(c.Fd(), unix.SOL_SOCKET, unix.SO_ERROR)
			require.NoError(t, err)
			require.Equal(t, int(unix.ECONNRESET), soerr)
		}, io.EOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newPoller(t)
			ln, err := ListenTCP("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			closeIt(t, ln)
			c, err := DialTCP("tcp", ln.Addr().String())
			require.NoError(t, err)
			closeIt(t, c)
			require.NoError(t, w.p.Register(c, tokClient, poll.Writable|poll.Error|poll.Hup, poll.Edge))
			w.wait(tokClient, poll.Writable) // connected; nobody asks yet
			require.NoError(t, w.p.Register(ln, tokServer, poll.Readable, poll.Level))
			w.wait(tokServer, poll.Readable)
			server, err := ln.Accept()
			require.NoError(t, err)
			closeIt(t, server)
			tc.end(t, w, c, server)
			// Wait until the end has reached the client, without reading.
			require.NoError(t, w.p.Reregister(c, tokClient, poll.Readable|poll.Error|poll.Hup, poll.Level))
			w.wait(tokClient, poll.Readable|poll.Error|poll.Hup)

			require.NoError(t, c.ConnectError(), "it connected")
			require.NoError(t, c.ConnectError(), "asked again")
			_, err = c.Read(make([]byte, 16))
			require.ErrorIs(t, err, tc.want)
			require.NotContains(t, err.Error(), "dial")
			require.NoError(t, c.ConnectError(), "after the read")
		})
	}
}

// resetClose closes c with SO_LINGER 0: the peer gets a reset, not a FIN.
func resetClose(t *testing.T, c *TCPConn) {
	t.Helper()
	require.NoError(t, unix.SetsockoptLinger(c.Fd(), unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1}))
	require.NoError(t, c.Close())
}
