package eventloop

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/poll"
)

// RunOnce is one iteration on the caller's goroutine: it returns without
// waiting when nothing is ready (timeout 0), dispatches what is, keeps an
// Again for the next call, and refuses to run beside Run.
func TestRunOnce(t *testing.T) {
	l := newLoop(t, Config{})
	src := newRegSource(t)
	rearms := 2
	rec := &recorder{next: func(poll.Event) Action {
		if rearms > 0 {
			rearms--
			return Again
		}
		return Keep
	}}
	_, err := l.Add(src.reg, poll.Readable, poll.Edge, rec)
	require.NoError(t, err)
	h := &tickCounter{}
	require.NoError(t, l.RunOnce(0, h))
	require.Equal(t, 0, rec.count())
	require.Equal(t, int64(1), h.ticks.Load())

	require.NoError(t, src.set.SetReadiness(poll.Readable))
	for want := 1; want <= 3; want++ {
		// The first call from the edge, then one per RunOnce for each
		// Again, without waiting even with a long timeout.
		start := time.Now()
		require.NoError(t, l.RunOnce(time.Minute, h))
		require.Less(t, time.Since(start), 30*time.Second)
		require.Equal(t, want, rec.count())
	}
	require.NoError(t, l.RunOnce(0, h))
	require.Equal(t, 3, rec.count())
	require.Equal(t, uint64(3), l.Stats().Calls)

	// Run is active once it has made an iteration (a posted function wakes
	// it). Calling RunOnce to find out would race with Run's start: a
	// RunOnce in progress makes that Run return ErrRunning.
	ran := &tickCounter{}
	r := start(t, l, ran)
	require.NoError(t, l.Post(func(*Loop) {}))
	eventually(t, "Run's first iteration", func() bool { return ran.ticks.Load() > 0 })
	require.ErrorIs(t, l.RunOnce(0, nil), ErrRunning)
	require.NoError(t, r.Stop(t))
	l.Shutdown()
	require.NoError(t, l.RunOnce(-1, nil), "after Shutdown RunOnce returns at once")
	require.NoError(t, l.Close())
	require.ErrorIs(t, l.RunOnce(0, nil), ErrClosed)
}
