package eventloop

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/poll"
)

// The zero and nil values of every type return errors, report nothing and
// do nothing; none panics.
func TestZeroValues(t *testing.T) {
	for name, l := range map[string]*Loop{"nil": nil, "zero": {}} {
		t.Run(name+" Loop", func(t *testing.T) {
			require.Nil(t, l.Poll())
			require.ErrorIs(t, l.Run(context.Background(), nil), ErrInvalidArgument)
			require.ErrorIs(t, l.RunOnce(0, nil), ErrInvalidArgument)
			_, err := l.Add(poll.Fd(0), poll.Readable, poll.Edge, SourceFunc(func(*Loop, poll.Event) Action { return Keep }))
			require.ErrorIs(t, err, ErrInvalidArgument)
			require.ErrorIs(t, l.Rearm(1<<63), ErrInvalidArgument)
			require.ErrorIs(t, l.Disarm(1<<63), ErrInvalidArgument)
			require.ErrorIs(t, l.Remove(1<<63), ErrInvalidArgument)
			require.ErrorIs(t, l.Trigger(1<<63), ErrInvalidArgument)
			require.ErrorIs(t, l.Post(func(*Loop) {}), ErrInvalidArgument)
			require.ErrorIs(t, l.Close(), ErrInvalidArgument)
			l.Shutdown()
			require.Zero(t, l.WakePollers(3))
			require.Zero(t, l.Sources())
			require.Equal(t, Stats{}, l.Stats())
		})
	}
	// Nil functions in non-nil interfaces are refused too.
	l := newLoop(t, Config{})
	src := newRegSource(t)
	_, err := l.Add(src.reg, poll.Readable, poll.Edge, SourceFunc(nil))
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.ErrorIs(t, l.Run(context.Background(), HandlerFunc(nil)), ErrInvalidArgument)
	require.ErrorIs(t, l.RunOnce(0, HandlerFunc(nil)), ErrInvalidArgument)
	_, err = New(Config{Workers: -1})
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = New(Config{Events: -1})
	require.ErrorIs(t, err, ErrInvalidArgument)
}
