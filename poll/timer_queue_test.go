package poll

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/base/wheel"
)

// The callback forms of the methods of a TimerQueue's wheel Queue, which
// package timer uses: Add adds nothing when newKey fails (and does not
// call it before the queue can take a deadline), Remove and TryRecv hand
// each key to their callback exactly once, and Locked runs under the same
// lock before and after the queue is bound.
func TestTimerQueueFuncs(t *testing.T) {
	p := newPollConfig(t, Config{})
	tq := NewTimerQueue(0)
	q := wheel.QueueOf(tq)
	t.Cleanup(func() { _ = tq.Close() })

	calls := 0
	_, err := q.Add(time.Hour, func() (uint64, error) { calls++; return 1, nil })
	require.ErrorIs(t, err, ErrNotRegistered)
	require.Zero(t, calls, "newKey called for a queue that cannot take a deadline")
	ran := false
	q.Locked(func() { ran = true })
	require.True(t, ran, "Locked before the queue is bound")

	require.NoError(t, p.Register(tq, 1, Readable, Edge))
	errMine := errors.New("no key")
	_, err = q.Add(time.Hour, func() (uint64, error) { calls++; return 0, errMine })
	require.ErrorIs(t, err, errMine)
	require.Equal(t, 1, calls)
	require.Zero(t, tq.Len(), "a failed newKey added a deadline")

	id, err := q.Add(time.Hour, func() (uint64, error) { return 42, nil })
	require.NoError(t, err)
	var got []uint64
	_, ok := q.Remove(id, func(k uint64) { got = append(got, k) })
	require.True(t, ok)
	_, ok = q.Remove(id, func(k uint64) { got = append(got, k) })
	require.False(t, ok, "removed twice")
	require.Equal(t, []uint64{42}, got)

	_, err = q.Add(0, func() (uint64, error) { return 7, nil })
	require.NoError(t, err)
	waitEvent(t, p, NewEvents(4), 1)
	got = got[:0]
	_, ok = q.TryRecv(func(k uint64) { got = append(got, k) })
	require.True(t, ok)
	_, ok = q.TryRecv(func(k uint64) { got = append(got, k) })
	require.False(t, ok)
	require.Equal(t, []uint64{7}, got)

	ran = false
	q.Locked(func() { ran = true })
	require.True(t, ran, "Locked once the queue is bound")
}

// TimerQueue.Close takes the queue's pending deadlines out of the Poll's
// wheel at once and counts them cancelled, and a delay of a Registration
// pending beside them is untouched.
func TestTimerQueueCloseDropsDeadlines(t *testing.T) {
	p := newPollConfig(t, Config{})
	tq := NewTimerQueue(0)
	require.NoError(t, p.Register(tq, 1, Readable, Edge))
	reg, set := NewRegistration()
	t.Cleanup(func() { _ = reg.Close() })
	require.NoError(t, p.Register(reg, 2, Readable, Edge))
	require.NoError(t, set.DelayReadiness(Readable, time.Hour))
	for i := range 3 {
		_, err := tq.Add(time.Duration(i+1)*time.Hour, uint64(i))
		require.NoError(t, err)
	}
	require.Equal(t, uint64(4), p.Stats().TimersPending)
	require.NoError(t, tq.Close())
	st := p.Stats()
	require.Equal(t, uint64(1), st.TimersPending, "only the Registration's delay is left")
	require.Equal(t, uint64(3), st.TimersCancelled)
	require.Equal(t, TimerStats{Cancelled: 3}, tq.Stats())
}
