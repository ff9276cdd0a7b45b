//go:build unix

package socket

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/poll"
)

// A connect refused after DialTCP returned: whoever hears of it first, a
// Read (as an eventloop.Conn does) or ConnectError, hears the dial's
// failure, and so does everyone after. ConnectError does not take the
// error a Read has already collected for a handshake still going on.
func TestRefusedConnectMessage(t *testing.T) {
	for _, first := range []string{"Read", "Write", "ConnectError"} {
		t.Run(first, func(t *testing.T) {
			addr := refusingAddr(t)
			c, err := DialTCP("tcp", addr)
			want := "socket: dial tcp " + addr + ": connect: connection refused"
			if err != nil {
				// Some kernels know at once on loopback: the same words.
				require.ErrorIs(t, err, unix.ECONNREFUSED)
				require.EqualError(t, err, want)
				return
			}
			closeIt(t, c)
			w := newPoller(t)
			require.NoError(t, w.p.Register(c, tokClient, poll.Readable|poll.Writable|poll.Error|poll.Hup, poll.Level))
			buf := make([]byte, 16)
			calls := map[string]func() error{
				"Read":         func() error { return second(c.Read(buf)) },
				"Write":        func() error { return second(c.Write(buf)) },
				"ConnectError": c.ConnectError,
			}
			for {
				w.wait(tokClient, poll.Readable|poll.Writable|poll.Error|poll.Hup)
				if err := calls[first](); !errors.Is(err, ErrWouldBlock) {
					break // spurious events aside, the first answer is the failure
				}
			}
			for _, name := range []string{first, "Read", "Write", "ConnectError", "Read"} {
				err := calls[name]()
				require.ErrorIs(t, err, unix.ECONNREFUSED, "%s after %s", name, first)
				require.EqualError(t, err, want, "%s after %s", name, first)
			}
		})
	}
}

// A dialed conn that connected and was then reset says so as a read, not
// as a connect: only a failed handshake is the dial's failure.
func TestResetAfterConnectIsNotTheDials(t *testing.T) {
	w := newPoller(t)
	ln, err := ListenTCP("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closeIt(t, ln)
	c, err := DialTCP("tcp", ln.Addr().String())
	require.NoError(t, err)
	closeIt(t, c)
	require.NoError(t, w.p.Register(ln, tokServer, poll.Readable, poll.Level))
	w.wait(tokServer, poll.Readable)
	server, err := ln.Accept()
	require.NoError(t, err)
	// Linger 0: Close resets the connection instead of ending it.
	require.NoError(t, unix.SetsockoptLinger(server.Fd(), unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1}))
	require.NoError(t, server.Close())
	require.NoError(t, w.p.Register(c, tokClient, poll.Readable|poll.Error|poll.Hup, poll.Level))
	for {
		w.wait(tokClient, poll.Readable|poll.Error|poll.Hup)
		_, err := c.Read(make([]byte, 16))
		if errors.Is(err, ErrWouldBlock) {
			continue
		}
		require.ErrorIs(t, err, unix.ECONNRESET)
		require.EqualError(t, err, "read: connection reset by peer")
		require.NoError(t, c.ConnectError(), "it was connected")
		return
	}
}

// refusingAddr is a loopback address that nothing listens on: a port that
// was just free.
func refusingAddr(t *testing.T) string {
	t.Helper()
	ln, err := ListenTCP("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}
