package poll

import (
	"errors"
	"math"
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

// A TimerQueue's resolution is rounded up to whole ticks of the wheel, so
// that its windows end where the wheel can fire: a deadline fires at the
// end of its window, never early and less than one window late, and
// windows are of equal lengths. (A 3ms resolution on a 2ms wheel, rounded
// to 3ms and then to ticks, fired deadlines in (3ms, 6ms] at 6ms but those
// in (0, 3ms] at 4ms, and one just after 3ms almost 3ms late plus a tick.)
func TestTimerQueueResolutionWholeTicks(t *testing.T) {
	const tick = 2 * time.Millisecond
	var w wheel
	w.init(tick, 16, func() {})
	for _, c := range []struct{ res, want time.Duration }{
		{0, 0}, {time.Millisecond, 0}, {tick, 0}, {3 * time.Millisecond, 4 * time.Millisecond},
		{4 * time.Millisecond, 4 * time.Millisecond}, {time.Second + 1, time.Second + tick},
		{math.MaxInt64, math.MaxInt64 / tick * tick},
	} {
		require.Equal(t, c.want, w.ownerRes(c.res), "resolution %v on a %v tick", c.res, tick)
	}
	id, err := w.newOwner(NewTimerQueue(3 * time.Millisecond))
	require.NoError(t, err)
	ms := int64(time.Millisecond)
	for _, c := range []struct{ deadline, fires int64 }{
		{1, 4 * ms}, {3 * ms, 4 * ms}, {3*ms + 1, 4 * ms}, {4 * ms, 4 * ms}, {4*ms + 1, 8 * ms},
		{8 * ms, 8 * ms}, {10 * ms, 12 * ms}, {math.MaxInt64, math.MaxInt64 / int64(tick)},
	} {
		due := w.dueOf(&wheelEntry{deadline: c.deadline, owner: id})
		if c.deadline == math.MaxInt64 {
			require.GreaterOrEqual(t, due, c.fires, "deadline %d saturates", c.deadline)
			continue
		}
		require.Equal(t, c.fires, due*int64(tick), "deadline %v fires at", time.Duration(c.deadline))
	}
}
