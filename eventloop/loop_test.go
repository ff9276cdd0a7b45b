package eventloop

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/poll"
)

// A socket's handler is called for its events with its own token, and
// Shutdown from inside a handler ends Run with nil.
func TestDispatchAndShutdownInside(t *testing.T) {
	l := newLoop(t, Config{})
	a, b := pair(t)
	var got []poll.Event
	tok, err := l.Add(a, poll.Readable, poll.Edge, SourceFunc(func(l *Loop, ev poll.Event) Action {
		got = append(got, ev)
		drain(a)
		l.Shutdown()
		return Keep
	}))
	require.NoError(t, err)
	require.True(t, IsLoopToken(tok))
	_, err = b.Write([]byte("x"))
	require.NoError(t, err)
	require.NoError(t, l.Run(context.Background(), nil))
	require.Len(t, got, 1)
	require.Equal(t, tok, got[0].Token)
	require.True(t, got[0].Ready.IsReadable())
	// Shut down for good: Run returns at once.
	require.NoError(t, l.Run(context.Background(), nil))
}

// tickCounter counts Ticks and the raw events Run hands it.
type tickCounter struct {
	ticks atomic.Int64
	raw   atomic.Int64
}

func (c *tickCounter) Ready(*Loop, poll.Event) { c.raw.Add(1) }
func (c *tickCounter) Tick(*Loop)              { c.ticks.Add(1) }

// Sources registered on Poll directly go to Run's Handler, and Tick runs
// between iterations; Shutdown from another goroutine ends Run.
func TestRawEventsTickShutdownOutside(t *testing.T) {
	l := newLoop(t, Config{})
	reg, set := poll.NewRegistration()
	defer reg.Close()
	require.NoError(t, l.Poll().Register(reg, 7, poll.Readable, poll.Edge))
	h := &tickCounter{}
	done := make(chan error, 1)
	go func() { done <- l.Run(context.Background(), h) }()
	require.NoError(t, set.SetReadiness(poll.Readable))
	eventually(t, "the raw event", func() bool { return h.raw.Load() == 1 })
	require.NoError(t, set.SetReadiness(poll.Readable))
	eventually(t, "the second raw event", func() bool { return h.raw.Load() == 2 })
	eventually(t, "a tick", func() bool { return h.ticks.Load() >= 1 })
	l.Shutdown()
	require.NoError(t, <-done)
}

func TestRunCancelledContext(t *testing.T) {
	l := newLoop(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, l.Run(ctx, nil), context.Canceled)
	// A context that ends during Run.
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, l.Run(ctx, nil), context.DeadlineExceeded)
	// The Loop was not shut down: it runs again.
	a, b := pair(t)
	called := make(chan struct{}, 1)
	_, err := l.Add(a, poll.Readable, poll.Edge, SourceFunc(func(l *Loop, ev poll.Event) Action {
		drain(a)
		called <- struct{}{}
		return Keep
	}))
	require.NoError(t, err)
	r := start(t, l, nil)
	_, err = b.Write([]byte("x"))
	require.NoError(t, err)
	<-called
	require.NoError(t, r.stop(t))
}
