//go:build unix

package socket

import (
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// What a user reads: each error names the package once, then what they
// called and on what, then why, and still matches its sentinel.
func TestErrorMessages(t *testing.T) {
	var never *TCPConn
	_, readErr := never.Read(make([]byte, 1))
	closed, err := ListenUDP("udp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, closed.Close())
	_, wrongAddr := closed.WriteTo([]byte("x"), &net.TCPAddr{})
	for _, tc := range []struct {
		err      error
		want     string
		sentinel error
	}{
		{readErr, "socket: read: not open", ErrNotOpen},
		{second(DialTCP("tcp", "localhost:80")),
			`socket: dial tcp localhost:80: address needs name resolution: host "localhost" is not an IP address`, ErrNeedsResolve},
		{second(ListenTCP("tcp", "127.0.0.1:http")),
			`socket: listen tcp 127.0.0.1:http: address needs name resolution: port "http" is a service name`, ErrNeedsResolve},
		{second(DialUDP("udp", "example.org:53")),
			`socket: dial udp example.org:53: address needs name resolution: host "example.org" is not an IP address`, ErrNeedsResolve},
		{second(DialTCP("tcp", "127.0.0.1")), "socket: dial tcp 127.0.0.1: invalid address: missing port in address", ErrInvalidAddr},
		{second(DialTCP("udp", "127.0.0.1:1")), `socket: dial udp 127.0.0.1:1: invalid network: "udp"`, ErrInvalidNetwork},
		{second(DialUnix("")), "socket: dial unix: invalid address", ErrInvalidAddr},
		{wrongAddr, "socket: write to :0: invalid address: want *net.UDPAddr, have *net.TCPAddr", ErrInvalidAddr},
		{closed.Close(), "socket: close: use of closed network connection", ErrClosed},
		{second(AdoptTCPListener(unixFd(t))), "socket: adopt tcp listener: wrong socket type: not an IP socket", ErrWrongSocketType},
	} {
		require.ErrorIs(t, tc.err, tc.sentinel)
		msg := tc.err.Error()
		require.Equal(t, tc.want, msg)
		require.True(t, strings.HasPrefix(msg, "socket: "), "%q names its package first", msg)
		require.Equal(t, 1, strings.Count(msg, "socket: "), "%q names its package once", msg)
	}
}

// unixFd is a descriptor that is not a listening TCP socket: a Unix
// socket, which the test closes at its end.
func unixFd(t *testing.T) int {
	t.Helper()
	a, b, err := Pair()
	require.NoError(t, err)
	closeIt(t, a)
	closeIt(t, b)
	return a.Fd()
}

// second is a call's error, for calls that return a value too.
func second[T any](_ T, err error) error { return err }
