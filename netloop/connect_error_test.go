package netloop

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/socket"
)

// A Conn added while its connect is still going on, which is then
// refused: it closes, and its CloseHandler hears the dial's failure in the
// words of the call the user made (what was dialed, and that the connect
// failed), not a read's.
func TestConnRefusedConnect(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	start(t, l, nil)
	ln, err := socket.ListenTCP("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now
	want := "socket: dial tcp " + addr + ": connect: connection refused"
	s, err := socket.DialTCP("tcp", addr)
	if err != nil {
		// Some kernels know at once on loopback: the same words, then.
		require.ErrorIs(t, err, unix.ECONNREFUSED)
		require.EqualError(t, err, want)
		return
	}
	h := newEcho()
	_, err = Add(l, s, h, Config{})
	require.NoError(t, err)
	select {
	case err := <-h.closed:
		require.ErrorIs(t, err, unix.ECONNREFUSED)
		require.EqualError(t, err, want)
	case <-time.After(waitLimit):
		t.Fatal("the Conn of a refused connect was not closed")
	}
}
