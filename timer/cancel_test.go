package timer

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/poll"
)

// Cancel returns the value of a pending timeout; a Timeout that already
// fired, was cancelled, or whose place in the wheel was reused by another
// timeout cancels nothing.
func TestTimerCancel(t *testing.T) {
	p := newPoll(t)
	tm := newTimer[string](t, p, poll.Edge)

	a, err := tm.Set(time.Hour, "a")
	require.NoError(t, err)
	v, ok := tm.Cancel(a)
	require.True(t, ok)
	require.Equal(t, "a", v)
	_, ok = tm.Cancel(a)
	require.False(t, ok, "cancelled twice")

	// b takes a's place in the wheel; a's handle must not cancel it.
	b, err := tm.Set(time.Millisecond, "b")
	require.NoError(t, err)
	_, ok = tm.Cancel(a)
	require.False(t, ok, "a stale Timeout cancelled the timeout that reused its place")
	waitEvent(t, p)
	// Fired, not yet taken: too late to cancel, and TryRecv still returns it.
	_, ok = tm.Cancel(b)
	require.False(t, ok, "cancelled a timeout that had fired")
	require.Equal(t, []string{"b"}, drain(tm))
	_, ok = tm.Cancel(b)
	require.False(t, ok)

	// The zero Timeout and another Timer's Timeout name nothing here.
	_, ok = tm.Cancel(Timeout{})
	require.False(t, ok)
	other, err := New[string]()
	require.NoError(t, err)
	defer other.Close()
	require.NoError(t, p.Register(other, tok+1, poll.Readable, poll.Edge))
	c, err := other.Set(time.Hour, "c")
	require.NoError(t, err)
	_, ok = tm.Cancel(c)
	require.False(t, ok, "one Timer cancelled another's timeout")
	v, ok = other.Cancel(c)
	require.True(t, ok)
	require.Equal(t, "c", v)

	st := tm.Stats()
	require.Equal(t, uint64(1), st.Cancelled)
	require.Equal(t, uint64(1), st.Fired)
	require.Zero(t, tm.Len())
}

// Capacity bounds what a Timer holds, pending or expired and untaken,
// wherever its values are: in the wheel's keys (int), beside them
// (string), or in its slab ([2]string).
func TestTimerCapacity(t *testing.T) {
	t.Run("key", func(t *testing.T) { testCapacity(t, [3]int{1, 2, 3}) })
	t.Run("beside", func(t *testing.T) { testCapacity(t, [3]string{"1", "2", "3"}) })
	t.Run("slab", func(t *testing.T) { testCapacity(t, [3][2]string{{"1"}, {"2"}, {"3"}}) })
}

func testCapacity[T any](t *testing.T, vals [3]T) {
	p := newPoll(t)
	tm := newTimer[T](t, p, poll.Edge, Capacity(2))
	_, err := tm.Set(time.Millisecond, vals[0])
	require.NoError(t, err)
	_, err = tm.Set(time.Hour, vals[1])
	require.NoError(t, err)
	_, err = tm.Set(time.Hour, vals[2])
	require.ErrorIs(t, err, ErrFull)
	waitEvent(t, p)
	_, err = tm.Set(time.Hour, vals[2])
	require.ErrorIs(t, err, ErrFull, "an expired value not yet taken still counts")
	v, ok := tm.TryRecv()
	require.True(t, ok)
	require.Equal(t, vals[0], v)
	_, err = tm.Set(time.Hour, vals[2])
	require.NoError(t, err)
	require.Equal(t, 2, tm.Len())
	require.NoError(t, tm.Close())
	require.Zero(t, tm.Len(), "a closed Timer holds nothing")
	_, err = tm.Set(time.Hour, vals[2])
	require.ErrorIs(t, err, ErrClosed)
}

// Bad input: clear errors, never a panic.
func TestTimerErrors(t *testing.T) {
	_, err := New[int](Tick(-1))
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = New[int](Capacity(-1))
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = New[int](nil) // a nil option is ignored
	require.NoError(t, err)

	tm, err := New[int]()
	require.NoError(t, err)
	_, err = tm.Set(time.Millisecond, 1)
	require.ErrorIs(t, err, ErrNotRegistered)
	p := newPoll(t)
	require.NoError(t, p.Register(tm, tok, poll.Readable, poll.Edge))
	_, err = tm.Set(-time.Nanosecond, 1)
	require.ErrorIs(t, err, ErrInvalidArgument)
	q := newPoll(t)
	require.ErrorIs(t, q.Register(tm, tok, poll.Readable, poll.Edge), poll.ErrRegisteredElsewhere)
	require.NoError(t, tm.Close())
	require.ErrorIs(t, tm.Close(), ErrClosed)
	require.ErrorIs(t, p.Register(tm, tok, poll.Readable, poll.Edge), ErrClosed)

	// A closed Poll: Set answers ErrClosed.
	tm2 := newTimer[int](t, q, poll.Edge)
	require.NoError(t, q.Close())
	_, err = tm2.Set(time.Millisecond, 1)
	require.ErrorIs(t, err, ErrClosed)

	for name, z := range map[string]*Timer[int]{"nil": nil, "zero": {}} {
		require.NotPanics(t, func() {
			_, err := z.Set(time.Millisecond, 1)
			require.ErrorIs(t, err, ErrInvalidArgument, name)
			require.ErrorIs(t, z.Register(p, 1, poll.Readable, poll.Edge), ErrInvalidArgument, name)
			require.ErrorIs(t, z.Reregister(p, 1, poll.Readable, poll.Edge), ErrInvalidArgument, name)
			require.ErrorIs(t, z.Deregister(p), ErrInvalidArgument, name)
			require.ErrorIs(t, z.Close(), ErrInvalidArgument, name)
			_, ok := z.TryRecv()
			require.False(t, ok)
			_, ok = z.Cancel(Timeout{})
			require.False(t, ok)
			require.Zero(t, z.Len())
			require.Equal(t, Stats{}, z.Stats())
			for range z.Drain() {
				t.Fatal("a zero Timer yielded a value")
			}
		}, name)
	}
}

// Cancel racing expiry, from several goroutines: every timeout ends up
// either cancelled (Cancel returned its value) or expired (TryRecv returned
// it), exactly one of the two, and nothing is lost. Set runs concurrently
// too.
func TestTimerCancelRacingExpiry(t *testing.T) {
	p := newPoll(t)
	tm := newTimer[int](t, p, poll.Edge)
	const setters, per = 4, 2000
	var (
		cancels = make([]atomic.Int32, setters*per)
		fires   = make([]atomic.Int32, setters*per)
		pending = make(chan Timeout, setters*per) // set, to be cancelled
	)
	var setWG, wg sync.WaitGroup
	for g := range setters {
		setWG.Add(1)
		go func() {
			defer setWG.Done()
			for i := range per {
				to, err := tm.Set(time.Duration(i%20)*100*time.Microsecond, g*per+i)
				if err != nil {
					t.Errorf("Set: %v", err)
					return
				}
				pending <- to
			}
		}()
	}
	go func() { setWG.Wait(); close(pending) }()
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for to := range pending {
				if v, ok := tm.Cancel(to); ok {
					cancels[v].Add(1)
				}
			}
		}()
	}
	// The poller takes what expires while the others set and cancel.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	ev := poll.NewEvents(4)
	finished := false
	deadline := time.Now().Add(30 * time.Second)
	for !finished || tm.Len() > 0 {
		require.True(t, time.Now().Before(deadline), "%d timeouts never expired", tm.Len())
		select {
		case <-done:
			finished = true
		default:
		}
		_, err := p.Poll(ev, time.Millisecond)
		require.NoError(t, err)
		for v := range tm.Drain() {
			fires[v].Add(1)
		}
	}
	for v := range setters * per {
		c, f := cancels[v].Load(), fires[v].Load()
		require.Equal(t, int32(1), c+f, "timeout %d: cancelled %d times and expired %d times", v, c, f)
	}
	st := tm.Stats()
	require.Equal(t, uint64(setters*per), st.Fired+st.Cancelled)
}
