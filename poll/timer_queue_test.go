package poll

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The callback forms of a TimerQueue's methods: AddFunc adds nothing when
// newKey fails (and does not call it before the queue can take a
// deadline), RemoveFunc and NextFunc hand each key to their callback
// exactly once, and Locked runs under the same lock before and after the
// queue is bound.
func TestTimerQueueFuncs(t *testing.T) {
	p := newPollConfig(t, Config{})
	q := NewTimerQueue(0)
	t.Cleanup(func() { _ = q.Close() })

	calls := 0
	_, err := q.AddFunc(time.Hour, func() (uint64, error) { calls++; return 1, nil })
	require.ErrorIs(t, err, ErrNotRegistered)
	require.Zero(t, calls, "newKey called for a queue that cannot take a deadline")
	ran := false
	q.Locked(func() { ran = true })
	require.True(t, ran, "Locked before the queue is bound")

	require.NoError(t, p.Register(q, 1, Readable, Edge))
	errMine := errors.New("no key")
	_, err = q.AddFunc(time.Hour, func() (uint64, error) { calls++; return 0, errMine })
	require.ErrorIs(t, err, errMine)
	require.Equal(t, 1, calls)
	require.Zero(t, q.Len(), "a failed newKey added a deadline")

	id, err := q.AddFunc(time.Hour, func() (uint64, error) { return 42, nil })
	require.NoError(t, err)
	var got []uint64
	require.True(t, q.RemoveFunc(id, func(k uint64) { got = append(got, k) }))
	require.False(t, q.RemoveFunc(id, func(k uint64) { got = append(got, k) }), "removed twice")
	require.Equal(t, []uint64{42}, got)

	_, err = q.AddFunc(0, func() (uint64, error) { return 7, nil })
	require.NoError(t, err)
	waitEvent(t, p, NewEvents(4), 1)
	got = got[:0]
	require.True(t, q.NextFunc(func(k uint64) { got = append(got, k) }))
	require.False(t, q.NextFunc(func(k uint64) { got = append(got, k) }))
	require.Equal(t, []uint64{7}, got)

	ran = false
	q.Locked(func() { ran = true })
	require.True(t, ran, "Locked once the queue is bound")
}
