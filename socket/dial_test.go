//go:build unix

package socket

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/poll"
)

// DialTCP takes IP literals only: a name would need a lookup, which blocks
// the event loop that called DialTCP. The refusal opens no descriptor.
// ListenTCP, DialUDP and ListenUDP follow the same rule.
func TestDialTCPRefusesNames(t *testing.T) {
	ln, err := ListenTCP("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closeIt(t, ln)
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)

	before := openFds(t)
	for _, addr := range []string{
		"localhost:" + port,
		"unipoll-test.invalid:" + port,
		"127.0.0.1:http", // a service name is a lookup too
	} {
		c, err := DialTCP("tcp", addr)
		require.ErrorIs(t, err, ErrNeedsResolve, addr)
		require.Nil(t, c)
		require.Contains(t, err.Error(), addr)
	}
	for _, open := range []func() error{
		func() error { _, err := ListenTCP("tcp", "localhost:0"); return err },
		func() error { _, err := ListenUDP("udp", "localhost:0"); return err },
		func() error { _, err := DialUDP("udp", "localhost:"+port); return err },
		func() error { _, err := DialUDP("udp", "127.0.0.1:domain"); return err },
	} {
		require.ErrorIs(t, open(), ErrNeedsResolve)
	}
	for _, tc := range []struct {
		network, addr string
		want          error
	}{
		{"tcp", "127.0.0.1:65536", ErrInvalidAddr},
		{"tcp", "127.0.0.1:", ErrInvalidAddr},
		{"tcp", "127.0.0.1", ErrInvalidAddr}, // no port
		{"tcp", "127.0.0.1:-1", ErrInvalidAddr},
		{"tcp", "[::1%]:1", ErrInvalidAddr},
		{"tcp", "127.0.0.1%lo:1", ErrInvalidAddr}, // a zone on IPv4
		{"tcp4", "[::1]:1", ErrInvalidNetwork},
		{"tcp6", "127.0.0.1:1", ErrInvalidNetwork},
		{"tcp6", "[::ffff:127.0.0.1]:1", ErrInvalidNetwork},
		{"udp", "127.0.0.1:1", ErrInvalidNetwork},
	} {
		_, err := DialTCP(tc.network, tc.addr)
		require.ErrorIs(t, err, tc.want, "%s %s", tc.network, tc.addr)
		require.NotErrorIs(t, err, ErrNeedsResolve, "%s %s", tc.network, tc.addr)
	}
	require.Equal(t, before, openFds(t), "a refused dial leaked a descriptor")

	// Literals still dial, an IPv4-mapped address as IPv4.
	w := newPoller(t)
	require.NoError(t, w.p.Register(ln, tokListener, poll.Readable, poll.Level))
	for _, tc := range []struct{ network, addr string }{
		{"tcp", "127.0.0.1:" + port},
		{"tcp", "[::ffff:127.0.0.1]:" + port},
		{"tcp4", "[::ffff:127.0.0.1]:" + port},
		{"tcp4", "127.0.0.1:0" + port}, // leading zeros are still a number
	} {
		addr := tc.addr
		c, err := DialTCP(tc.network, addr)
		require.NoError(t, err, addr)
		closeIt(t, c)
		require.NoError(t, w.p.Register(c, tokClient, poll.Writable, poll.Edge))
		w.wait(tokClient, poll.Writable)
		require.NoError(t, c.ConnectError(), addr)
		require.Equal(t, "127.0.0.1:"+port, c.RemoteAddr().String())
		require.Equal(t, unix.AF_INET, family(t, c.Fd()))
	}
}

// family is the address family of socket fd.
func family(t *testing.T, fd int) int {
	t.Helper()
	sa, err := unix.Getsockname(fd)
	require.NoError(t, err)
	switch sa.(type) {
	case *unix.SockaddrInet4:
		return unix.AF_INET
	case *unix.SockaddrInet6:
		return unix.AF_INET6
	}
	return -1
}
