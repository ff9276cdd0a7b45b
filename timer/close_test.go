package timer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/poll"
)

// A Poll outlives any number of Timers opened one at a time, each given a
// timeout an hour away and closed: Close gives the Timer's owner id back
// and takes its timeouts out of the wheel at once, so more Timers than
// there are owner ids (65,534) come and go, and a Register after them
// still works.
func TestTimerCloseReleasesItsID(t *testing.T) {
	p := newPoll(t)
	const n = 70_000
	for i := range n {
		tm, err := New[int]()
		require.NoError(t, err)
		require.NoError(t, p.Register(tm, tok, poll.Readable, poll.Edge), "Timer %d", i)
		_, err = tm.Set(time.Hour, i)
		require.NoError(t, err)
		require.NoError(t, tm.Close())
	}
	require.Zero(t, p.Stats().TimersPending, "closed Timers' timeouts still in the wheel")
	tm := newTimer[string](t, p, poll.Edge)
	_, err := tm.Set(time.Millisecond, "after")
	require.NoError(t, err)
	waitEvent(t, p)
	require.Equal(t, []string{"after"}, drain(tm))
}
