package netloop

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/eventloop"
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
			g.Shutdown()
		})
	}
	g := (*Group)(nil)
	require.Zero(t, g.AcceptPauses())
	l := newLoop(t, eventloop.Config{})
	_, err := Add(l, nil, HandlerFunc(nil), Config{})
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = NewGroup(GroupConfig{Loops: -1})
	require.ErrorIs(t, err, ErrInvalidArgument)
}
