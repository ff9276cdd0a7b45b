//go:build unix

package socket

import (
	"errors"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/poll"
)

func TestUDPRoundTrip(t *testing.T) {
	w := newPoller(t)
	srv, err := ListenUDP("udp", "127.0.0.1:0")
	require.NoError(t, err)
	closeIt(t, srv)
	require.Nil(t, srv.RemoteAddr())
	cli, err := DialUDP("udp", srv.LocalAddr().String())
	require.NoError(t, err)
	closeIt(t, cli)
	require.Equal(t, srv.LocalAddr().String(), cli.RemoteAddr().String())
	require.NoError(t, w.p.Register(srv, tokServer, poll.Readable, poll.Edge))
	require.NoError(t, w.p.Register(cli, tokClient, poll.Readable, poll.Edge))

	buf := make([]byte, 2048)
	_, _, err = srv.ReadFrom(buf)
	require.ErrorIs(t, err, ErrWouldBlock)

	for _, msg := range []string{"ping", "", "a longer datagram"} {
		n, err := cli.Write([]byte(msg))
		require.NoError(t, err)
		require.Equal(t, len(msg), n)

		n, from := readFrom(w, srv, buf)
		require.Equal(t, msg, string(buf[:n]), "datagram boundaries are kept")
		require.IsType(t, (*net.UDPAddr)(nil), from)
		require.Equal(t, cli.LocalAddr().String(), from.String())

		n, err = srv.WriteTo([]byte("re:"+msg), from)
		require.NoError(t, err)
		require.Equal(t, len(msg)+3, n)
		for {
			n, err = cli.Read(buf)
			if errors.Is(err, ErrWouldBlock) {
				w.wait(tokClient, poll.Readable)
				continue
			}
			require.NoError(t, err)
			break
		}
		require.Equal(t, "re:"+msg, string(buf[:n]))
	}

	_, err = srv.WriteTo([]byte("x"), &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1})
	require.ErrorIs(t, err, ErrInvalidAddr)
	_, err = srv.WriteTo([]byte("x"), nil)
	require.ErrorIs(t, err, ErrInvalidAddr)
}

func readFrom(w *poller, c *UDPConn, buf []byte) (int, net.Addr) {
	w.t.Helper()
	for {
		n, from, err := c.ReadFrom(buf)
		if errors.Is(err, ErrWouldBlock) {
			w.wait(tokServer, poll.Readable)
			continue
		}
		require.NoError(w.t, err)
		return n, from
	}
}
