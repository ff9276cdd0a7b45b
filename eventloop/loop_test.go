package eventloop

import (
	"context"
	"fmt"
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
	require.NoError(t, r.Stop(t))
}

// serialHandler checks that Run's Handler is never called concurrently
// (Ready and Tick included), as Run promises with several workers.
type serialHandler struct {
	inside  atomic.Int32
	overlap atomic.Bool
	raw     atomic.Int64
	ticks   atomic.Int64
}

func (h *serialHandler) enter() {
	if h.inside.Add(1) > 1 {
		h.overlap.Store(true)
	}
}

func (h *serialHandler) Ready(*Loop, poll.Event) {
	h.enter()
	h.raw.Add(1)
	h.inside.Add(-1)
}

func (h *serialHandler) Tick(*Loop) {
	h.enter()
	h.ticks.Add(1)
	h.inside.Add(-1)
}

// WakePollers wakes a Run blocked in Poll, which then goes through an
// iteration (Tick) without any event; with several workers it also wakes
// idle ones, and says how many. Run's Handler gets the events of sources
// registered on Poll directly, one call at a time.
func TestWakePollersAndRawHandler(t *testing.T) {
	for _, workers := range []int{1, 3} {
		t.Run(fmt.Sprint(workers), func(t *testing.T) {
			l := newLoop(t, Config{Workers: workers})
			reg, set := poll.NewRegistration()
			defer reg.Close()
			require.NoError(t, l.Poll().Register(reg, 42, poll.Readable, poll.Level))
			h := &serialHandler{}
			start(t, l, h)
			require.NoError(t, set.SetReadiness(poll.Readable))
			eventually(t, "raw events", func() bool { return h.raw.Load() > 100 })
			require.NoError(t, set.UnsetReadiness(poll.Readable))
			// Now idle: the Loop blocks in Poll.
			quiesce(t, l)
			ticks := h.ticks.Load()
			woken := 0
			// With several workers, wait also for one to be idle when
			// asked: one that quiesce's posts woke may still be busy.
			eventually(t, "a tick from WakePollers alone", func() bool {
				woken += l.WakePollers(workers)
				return h.ticks.Load() > ticks && (workers == 1 || woken > 0)
			})
			if workers == 1 {
				require.Zero(t, woken, "one worker: nobody idle to wake")
			} else {
				require.Positive(t, woken, "idle workers woken")
			}
			require.Zero(t, l.WakePollers(0))
			require.False(t, h.overlap.Load(), "Run's Handler was called concurrently")
		})
	}
}
