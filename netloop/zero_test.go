package netloop

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/socket"
)

// The zero and nil values of every type return errors, report nothing and
// do nothing; none panics.
func TestZeroValues(t *testing.T) {
	for name, l := range map[string]*eventloop.Loop{"nil": nil, "zero": {}} {
		t.Run(name+" Loop", func(t *testing.T) {
			_, err := Add(l, nil, nil, Config{})
			require.ErrorIs(t, err, ErrInvalidArgument)
			require.Zero(t, Conns(l))
		})
	}
	for name, c := range map[string]*Conn{"nil": nil, "zero": {}} {
		t.Run(name+" Conn", func(t *testing.T) {
			_, err := c.Write([]byte("x"))
			require.ErrorIs(t, err, ErrInvalidArgument)
			_, err = c.WriteString("x")
			require.ErrorIs(t, err, ErrInvalidArgument)
			require.ErrorIs(t, c.Async(func(*Conn) {}), ErrInvalidArgument)
			require.True(t, c.Closed())
			require.Zero(t, c.Queued())
			require.Zero(t, c.Buffered())
			require.Zero(t, c.Token())
			require.Nil(t, c.Loop())
			require.Nil(t, c.Stream())
			c.Flush()
			c.Close()
			c.CloseWrite()
			c.Abort(nil)
			c.PauseRead()
			c.ResumeRead()
		})
	}
	for name, g := range map[string]*Group{"nil": nil, "zero": {}} {
		t.Run(name+" Group", func(t *testing.T) {
			require.Empty(t, g.Loops())
			require.ErrorIs(t, g.Run(context.Background(), nil), ErrInvalidArgument)
			require.ErrorIs(t, g.Shutdown(context.Background()), ErrInvalidArgument)
			_, err := g.ListenUnix("x", func(*eventloop.Loop, *socket.UnixConn) {})
			require.ErrorIs(t, err, ErrInvalidArgument)
			_, err = g.ListenUDP("udp", "127.0.0.1:0", func(*eventloop.Loop, *socket.UDPConn, []byte, net.Addr) {})
			require.ErrorIs(t, err, ErrInvalidArgument)
		})
	}
	g := (*Group)(nil)
	require.Zero(t, g.AcceptPauses())
	require.ErrorIs(t, Shutdown(context.Background(), nil), ErrInvalidArgument)
	require.ErrorIs(t, Shutdown(context.Background(), &eventloop.Loop{}), ErrInvalidArgument)
	var ln *Listener
	require.Nil(t, ln.Addr())
	require.ErrorIs(t, ln.Close(), ErrInvalidArgument)
	require.ErrorIs(t, (&Listener{}).Close(), ErrInvalidArgument)
	l := newLoop(t, eventloop.Config{})
	_, err := Add(l, nil, HandlerFunc(nil), Config{})
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = NewGroup(GroupConfig{Loops: -1})
	require.ErrorIs(t, err, ErrInvalidArgument)
}
