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
// The same with values that carry a pointer beside their key.
func TestTimerCloseReleasesItsID(t *testing.T) {
	t.Run("key", func(t *testing.T) { testCloseReleasesID(t, func(i int) int { return i }) })
	t.Run("beside", func(t *testing.T) { testCloseReleasesID(t, func(i int) *int { return &i }) })
}

func testCloseReleasesID[T any](t *testing.T, val func(int) T) {
	p := newPoll(t)
	const n = 70_000
	for i := range n {
		tm, err := New[T]()
		require.NoError(t, err)
		require.NoError(t, p.Register(tm, tok, poll.Readable, poll.Edge), "Timer %d", i)
		_, err = tm.Set(time.Hour, val(i))
		require.NoError(t, err)
		_, err = tm.Set(time.Hour, val(i))
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

// A Timer closed after its Poll holds nothing, wherever it keeps its
// values (in the wheel's keys, beside them, or in its slab).
func TestTimerLenAfterPollClose(t *testing.T) {
	t.Run("key", func(t *testing.T) { testLenAfterPollClose(t, 1, 2) })
	t.Run("beside", func(t *testing.T) { testLenAfterPollClose(t, "1", "2") })
	t.Run("slab", func(t *testing.T) { testLenAfterPollClose[any](t, "1", 2) })
}

func testLenAfterPollClose[T any](t *testing.T, a, b T) {
	p, err := poll.New()
	require.NoError(t, err)
	tm, err := New[T]()
	require.NoError(t, err)
	require.NoError(t, p.Register(tm, tok, poll.Readable, poll.Edge))
	_, err = tm.Set(time.Hour, a)
	require.NoError(t, err)
	_, err = tm.Set(time.Hour, b)
	require.NoError(t, err)
	require.Equal(t, 2, tm.Len())
	require.NoError(t, p.Close())
	require.NoError(t, tm.Close())
	require.Zero(t, tm.Len(), "a closed Timer holds nothing")
	_, err = tm.Set(time.Hour, a)
	require.ErrorIs(t, err, ErrClosed)
}
