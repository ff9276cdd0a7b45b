package wheel

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var errUnbound = errors.New("unbound")

// newTestQueue returns a Queue whose readiness it records in *readable.
func newTestQueue(res time.Duration, readable *bool) *Queue {
	q := new(Queue)
	q.Init(res, func(on bool) { *readable = on }, func() error { return errUnbound }, errClosed)
	return q
}

// bindTo binds q to w, with a register that succeeds.
func bindTo(q *Queue, w *Wheel, undone *int) error {
	return q.Bind(func() (*Wheel, error) { return w, nil }, func() { *undone++ })
}

// A Queue before Bind takes nothing and calls no callback; Bind that
// cannot register, or finds the wheel closed or out of owner ids, binds
// nothing and undoes the registration (but for register's own failure);
// a bound Queue hands out its expired keys in deadline order, readable
// exactly while some wait; Close makes Add fail, and the closed Queue's
// owner id is reused once its entries are gone.
func TestQueueBind(t *testing.T) {
	readable := false
	q := newTestQueue(0, &readable)
	_, err := q.Add(time.Hour, func() (uint64, error) { t.Fatal("newKey before Bind"); return 0, nil })
	require.ErrorIs(t, err, errUnbound)
	_, ok := q.TryRecv(func(uint64) { t.Fatal("take before Bind") })
	require.False(t, ok)
	require.Equal(t, Stats{}, q.Stats())

	undone := 0
	errReg := errors.New("register")
	require.ErrorIs(t, q.Bind(func() (*Wheel, error) { return nil, errReg }, func() { undone++ }), errReg)
	require.Zero(t, undone, "undo after a failed register")

	closed := new(Wheel)
	closed.Init(time.Millisecond, 16, func() {}, func(uint64) {})
	closed.Close()
	require.ErrorIs(t, bindTo(q, closed, &undone), errClosed)
	require.Equal(t, 1, undone)

	full := new(Wheel)
	full.Init(time.Millisecond, 16, func() {}, func(uint64) {})
	full.owners = append(full.owners, make([]owner, MaxQueues)...) // every id taken
	require.ErrorIs(t, bindTo(q, full, &undone), ErrFull)
	require.Equal(t, 2, undone)

	w, _ := newTestWheel(t, time.Millisecond, 16, 0) // owner 1 taken
	require.NoError(t, bindTo(q, w, &undone))
	require.NoError(t, bindTo(q, w, &undone), "a second Bind keeps the first")
	require.Equal(t, uint16(2), q.id)
	for _, c := range []struct {
		d   time.Duration
		key uint64
	}{{3 * time.Hour, 3}, {time.Hour, 1}, {2 * time.Hour, 2}} { // far apart: no scheduling delay between Adds reorders them
		_, err := q.Add(c.d, func() (uint64, error) { return c.key, nil })
		require.NoError(t, err)
	}
	w.Advance(4 * time.Hour)
	w.Expire()
	require.True(t, readable, "expired keys wait, the Queue is not readable")
	for want := uint64(1); want <= 3; want++ {
		got, ok := q.TryRecv(nil)
		require.True(t, ok)
		require.Equal(t, want, got, "deadline order")
	}
	require.False(t, readable, "every key taken, the Queue is still readable")
	require.Equal(t, Stats{Fired: 3}, q.Stats())

	pending, err := q.Add(5*time.Hour, func() (uint64, error) { return 9, nil })
	require.NoError(t, err)
	require.NoError(t, q.Close(func() error { return nil }))
	_, err = q.Add(time.Hour, func() (uint64, error) { t.Fatal("newKey after Close"); return 0, nil })
	require.ErrorIs(t, err, errClosed)
	require.Zero(t, w.Pending(), "a closed Queue's pending deadline left the wheel at once")
	require.NoError(t, w.Check())
	require.Equal(t, Stats{Fired: 3, Cancelled: 1}, q.Stats(), "the dropped deadline counts as cancelled")
	_, ok = q.Remove(pending, nil)
	require.False(t, ok, "Remove of a closed Queue's deadline")

	// The id is free at once; the closed Queue does not reach its
	// successor's deadlines through it.
	id, err := w.newOwner(0, false, func(bool) {}, errClosed)
	require.NoError(t, err)
	require.Equal(t, uint16(2), id, "the closed owner's id, free once Close returned")
	next, _ := w.add(id, 7, time.Hour)
	_, ok = q.Remove(next, nil)
	require.False(t, ok, "a closed Queue removed its successor's deadline")
	_, ok = q.TryRecv(nil)
	require.False(t, ok)
	require.Equal(t, Stats{Fired: 3, Cancelled: 1}, q.Stats(), "a closed Queue reports its successor's counters")
	w.mu.Lock()
	st := w.stats(id)
	w.mu.Unlock()
	require.Equal(t, Stats{Pending: 1}, st)
}
