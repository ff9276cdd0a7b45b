package eventloop

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/poll"
)

// recorder is a SourceHandler whose behaviour and observations the test
// controls: it records every call and every Removed, and returns the
// action next says.
type recorder struct {
	mu      sync.Mutex
	calls   []poll.Event
	removed []poll.Token
	next    func(ev poll.Event) Action
	inside  atomic.Int32 // calls in progress: must never exceed 1
	overlap atomic.Bool  // a call started while another was in progress
	after   atomic.Bool  // a call started after Removed
}

func (r *recorder) Ready(l *Loop, ev poll.Event) Action {
	if r.inside.Add(1) > 1 {
		r.overlap.Store(true)
	}
	defer r.inside.Add(-1)
	r.mu.Lock()
	if len(r.removed) > 0 {
		r.after.Store(true)
	}
	r.calls = append(r.calls, ev)
	next := r.next
	r.mu.Unlock()
	if next == nil {
		return Keep
	}
	return next(ev)
}

func (r *recorder) Removed(l *Loop, t poll.Token) {
	if r.inside.Load() != 0 {
		r.overlap.Store(true) // Removed while Ready runs
	}
	r.mu.Lock()
	r.removed = append(r.removed, t)
	r.mu.Unlock()
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

func (r *recorder) removedCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.removed)
}

func (r *recorder) check(t *testing.T) {
	t.Helper()
	require.False(t, r.overlap.Load(), "a call overlapped another call or Removed")
	require.False(t, r.after.Load(), "a call came after Removed")
}

// A user-space source whose readiness the test sets, on a running Loop.
type regSource struct {
	reg *poll.Registration
	set *poll.SetReadiness
}

func newRegSource(t testing.TB) regSource {
	reg, set := poll.NewRegistration()
	t.Cleanup(func() { _ = reg.Close() })
	return regSource{reg, set}
}

// Keep under Edge: one call per edge.
func TestActionKeepEdge(t *testing.T) {
	l := newLoop(t, Config{})
	src := newRegSource(t)
	rec := &recorder{}
	_, err := l.Add(src.reg, poll.Readable, poll.Edge, rec)
	require.NoError(t, err)
	start(t, l, nil)
	for i := 1; i <= 3; i++ {
		require.NoError(t, src.set.SetReadiness(poll.Readable))
		eventually(t, "the call for edge", func() bool { return rec.count() == i })
	}
	rec.check(t)
}

// Again of an armed Edge source calls the handler again without a new
// edge, in the next iteration, until it stops asking.
func TestActionAgainEdge(t *testing.T) {
	l := newLoop(t, Config{})
	src := newRegSource(t)
	var n atomic.Int32
	rec := &recorder{next: func(poll.Event) Action {
		if n.Add(1) < 5 {
			return Again
		}
		return Keep
	}}
	_, err := l.Add(src.reg, poll.Readable, poll.Edge, rec)
	require.NoError(t, err)
	start(t, l, nil)
	require.NoError(t, src.set.SetReadiness(poll.Readable))
	eventually(t, "five calls from one edge", func() bool { return rec.count() == 5 })
	// And then none: Keep waits for the next edge.
	require.NoError(t, l.Post(func(*Loop) {}))
	before := l.Stats().Iterations
	eventually(t, "two more iterations", func() bool {
		_ = l.Post(func(*Loop) {})
		return l.Stats().Iterations > before+2
	})
	require.Equal(t, 5, rec.count())
	rec.check(t)
}

// Oneshot: one call, then nothing until Again (the action) or Rearm (the method),
// which reports a source that is still ready at once.
func TestActionRearmOneshot(t *testing.T) {
	l := newLoop(t, Config{})
	src := newRegSource(t)
	var calls atomic.Int32
	rec := &recorder{next: func(poll.Event) Action {
		if calls.Add(1) == 1 {
			return Again // still ready: called again
		}
		return Keep // disarmed by Oneshot until Loop.Rearm
	}}
	tok, err := l.Add(src.reg, poll.Readable, poll.Oneshot, rec)
	require.NoError(t, err)
	start(t, l, nil)
	require.NoError(t, src.set.SetReadiness(poll.Readable))
	eventually(t, "two calls", func() bool { return rec.count() == 2 })
	require.NoError(t, src.set.SetReadiness(poll.Readable))
	quiesce(t, l)
	require.Equal(t, 2, rec.count(), "a spent Oneshot was called")
	require.NoError(t, l.Rearm(tok))
	eventually(t, "the call after Rearm", func() bool { return rec.count() == 3 })
	rec.check(t)
}

// quiesce lets the running Loop go through a few iterations, so that an
// event that should not come would have come.
func quiesce(t *testing.T, l *Loop) {
	t.Helper()
	testsupport.Quiesce(t, waitLimit, func() uint64 { return l.Stats().Iterations },
		func() {
			_ = l.Post(func(*Loop) {})
			// And the poller itself: with several workers, an idle one may
			// run the posted function while the poller stays in its Poll,
			// whose calls are what is counted.
			l.WakePollers(1)
		})
}

// Disarm (the action, and the method from another goroutine): no calls
// until Rearm, and readiness that arrived meanwhile is reported then.
func TestActionDisarm(t *testing.T) {
	for _, opts := range []poll.PollOpt{poll.Edge, poll.Level} {
		t.Run(opts.String(), func(t *testing.T) {
			l := newLoop(t, Config{})
			src := newRegSource(t)
			rec := &recorder{next: func(poll.Event) Action { return Disarm }}
			tok, err := l.Add(src.reg, poll.Readable, opts, rec)
			require.NoError(t, err)
			start(t, l, nil)
			require.NoError(t, src.set.SetReadiness(poll.Readable))
			eventually(t, "the first call", func() bool { return rec.count() == 1 })
			require.NoError(t, src.set.SetReadiness(poll.Readable))
			quiesce(t, l)
			require.Equal(t, 1, rec.count(), "called while disarmed")
			require.NoError(t, l.Rearm(tok))
			eventually(t, "the call after Rearm", func() bool { return rec.count() == 2 })
			quiesce(t, l) // its Disarm is applied: the call has returned
			// The method, from this goroutine: disarmed again.
			rec.mu.Lock()
			rec.next = nil
			rec.mu.Unlock()
			require.NoError(t, l.Rearm(tok))
			if opts == poll.Level {
				eventually(t, "level calls", func() bool { return rec.count() >= 4 })
			} else {
				eventually(t, "the edge after Rearm", func() bool { return rec.count() == 3 })
			}
			require.NoError(t, l.Disarm(tok))
			require.NoError(t, l.Disarm(tok), "Disarm twice")
			quiesce(t, l) // a call in progress when Disarm returned may end
			n := rec.count()
			require.NoError(t, src.set.SetReadiness(poll.Readable))
			quiesce(t, l)
			require.Equal(t, n, rec.count(), "called while disarmed")
			rec.check(t)
		})
	}
}

// Remove, as an action: Removed runs after the call returned, once, and
// the token is dead.
func TestActionRemove(t *testing.T) {
	l := newLoop(t, Config{})
	src := newRegSource(t)
	rec := &recorder{next: func(poll.Event) Action { return Remove }}
	tok, err := l.Add(src.reg, poll.Readable, poll.Level, rec)
	require.NoError(t, err)
	require.Equal(t, 1, l.Sources())
	start(t, l, nil)
	require.NoError(t, src.set.SetReadiness(poll.Readable))
	eventually(t, "Removed", func() bool { return rec.removedCount() == 1 })
	quiesce(t, l)
	require.Equal(t, 1, rec.count())
	require.Equal(t, []poll.Token{tok}, rec.removed)
	require.ErrorIs(t, l.Remove(tok), ErrUnknownToken)
	require.ErrorIs(t, l.Rearm(tok), ErrUnknownToken)
	require.ErrorIs(t, l.Disarm(tok), ErrUnknownToken)
	require.Equal(t, 0, l.Sources())
	rec.check(t)
}

// Remove from another goroutine while the handler runs: Remove returns
// at once, the call runs to its end, Removed runs after it and never
// before, and no call follows.
func TestRemoveWhileRunning(t *testing.T) {
	l := newLoop(t, Config{})
	src := newRegSource(t)
	entered := make(chan struct{})
	release := make(chan struct{})
	rec := &recorder{next: func(poll.Event) Action {
		close(entered)
		<-release
		return Again // asks for more: must not get it
	}}
	tok, err := l.Add(src.reg, poll.Readable, poll.Level, rec)
	require.NoError(t, err)
	start(t, l, nil)
	require.NoError(t, src.set.SetReadiness(poll.Readable))
	<-entered
	require.NoError(t, l.Remove(tok))
	require.Equal(t, 0, rec.removedCount(), "Removed ran while the call was in progress")
	close(release)
	eventually(t, "Removed", func() bool { return rec.removedCount() == 1 })
	quiesce(t, l)
	require.Equal(t, 1, rec.count())
	rec.check(t)
}

// Remove from another goroutine of a source that is not running: its
// Removed runs on the Loop (the Run goroutine), before long.
func TestRemoveIdleFromOutside(t *testing.T) {
	l := newLoop(t, Config{})
	src := newRegSource(t)
	rec := &recorder{}
	tok, err := l.Add(src.reg, poll.Readable, poll.Edge, rec)
	require.NoError(t, err)
	start(t, l, nil)
	require.NoError(t, l.Remove(tok))
	eventually(t, "Removed", func() bool { return rec.removedCount() == 1 })
	require.NoError(t, src.set.SetReadiness(poll.Readable))
	quiesce(t, l)
	require.Equal(t, 0, rec.count())
	rec.check(t)
}

// Without a Run, Remove runs Removed itself, and Close removes every
// source that is left.
func TestRemoveAndCloseWithoutRun(t *testing.T) {
	l, err := New(Config{})
	require.NoError(t, err)
	a, b := newRegSource(t), newRegSource(t)
	ra, rb := &recorder{}, &recorder{}
	ta, err := l.Add(a.reg, poll.Readable, poll.Edge, ra)
	require.NoError(t, err)
	_, err = l.Add(b.reg, poll.Readable, poll.Edge, rb)
	require.NoError(t, err)
	require.NoError(t, l.Remove(ta))
	require.Equal(t, 1, ra.removedCount())
	require.NoError(t, l.Close())
	require.Equal(t, 1, rb.removedCount())
	require.ErrorIs(t, l.Close(), ErrClosed)
	_, err = l.Add(a.reg, poll.Readable, poll.Edge, ra)
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, l.Post(func(*Loop) {}), ErrClosed)
}
