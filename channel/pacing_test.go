package channel

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// Pacing (segQueue's header) as a state machine, driven by the consumer
// alone: when a reload counts as caught up, when pace spins, and the
// backoff after spins that found nothing.

// pacedQueue returns a queue that paces whatever GOMAXPROCS is.
func pacedQueue() *segQueue[int] {
	q := newSegQueue[int](4)
	q.paced = true
	return q
}

// popN pops n values and then finds the queue empty.
func popN(t *testing.T, q *segQueue[int], n int) {
	t.Helper()
	for range n {
		_, ok := q.Pop()
		require.True(t, ok)
	}
	_, ok := q.Pop()
	require.False(t, ok)
}

// spins reports whether pace spun.
func spins(q *segQueue[int]) bool {
	before := q.paces
	q.pace()
	return q.paces != before
}

func TestPaceAfterCatchingUp(t *testing.T) {
	q := pacedQueue()
	require.False(t, spins(q), "a fresh queue has not caught up with anyone")

	q.Push(1)
	q.Push(2)
	popN(t, q, 2)
	require.True(t, q.near, "a reload that found nothing has caught up")
	require.True(t, spins(q))
	require.False(t, q.near, "a pace uses up the catching up")
	require.False(t, spins(q), "two paces in a row")

	q.Push(3)
	_, ok := q.Pop()
	require.True(t, ok, "the reload after a pace finds what was sent meanwhile")
	require.Zero(t, q.wasted)

	q.unpace()
	require.False(t, spins(q), "unpace: the next batch starts without spinning")
}

func TestPaceOnlyWhenClose(t *testing.T) {
	q := pacedQueue()
	for i := range paceNear {
		q.Push(i)
	}
	_, ok := q.Pop()
	require.True(t, ok)
	require.False(t, q.near, "a run of paceNear values is not close behind")

	// A run that ends with the segment says nothing about the producers.
	q = pacedQueue()
	for i := range segSize + 1 {
		q.Push(i)
	}
	for range segSize - 4 {
		_, _ = q.Pop()
	}
	// The reloads so far found long runs; make the next one short by
	// reading from a fresh load at slot segSize-4.
	q.bits = 0
	_, ok = q.Pop()
	require.True(t, ok)
	require.False(t, q.near, "a run of 4 cut short by the segment's end")
}

func TestPaceBacksOff(t *testing.T) {
	q := pacedQueue()
	wasteOne := func() (spun bool) {
		// Catch up. Not an opportunity when the value was its segment's
		// last: that reload cannot tell.
		for !q.near {
			q.Push(0)
			popN(t, q, 1)
		}
		spun = spins(q)
		_, ok := q.Pop() // the reload that judges the spin, if any
		require.False(t, ok)
		return spun
	}
	// Spins that find nothing skip 1, 3, 7, ... opportunities before the
	// next spin, up to 1<<paceBackoffMax - 1.
	var gaps []int
	gap := 0
	for len(gaps) < paceBackoffMax+2 {
		if wasteOne() {
			gaps = append(gaps, gap)
			gap = 0
		} else {
			gap++
		}
	}
	want := []int{0}
	for i := 1; i < len(gaps); i++ {
		want = append(want, 1<<min(i, paceBackoffMax)-1)
	}
	require.Equal(t, want, gaps)

	// A spin that finds values ends the backoff.
	for !spinsAfterCatchingUp(t, q) {
	}
	q.Push(1)
	_, ok := q.Pop()
	require.True(t, ok)
	require.Zero(t, q.wasted)
	require.Zero(t, q.skip)
}

// spinsFromSegmentStart moves to a segment's start (so that a run is not
// cut short by the segment's end), forgets that the consumer caught up,
// then catches up again and paces.
func spinsFromSegmentStart(t *testing.T, q *segQueue[int]) bool {
	t.Helper()
	for q.head%segSize != 0 {
		q.Push(0)
		popN(t, q, 1)
	}
	q.unpace()
	return spinsAfterCatchingUp(t, q)
}

// spinsAfterCatchingUp catches up with an empty queue and paces.
func spinsAfterCatchingUp(t *testing.T, q *segQueue[int]) bool {
	t.Helper()
	for !q.near {
		q.Push(0)
		popN(t, q, 1)
	}
	return spins(q)
}

func TestPaceNeedsTwoProcessors(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	q := newSegQueue[int](4)
	require.False(t, q.paced)
	q.Push(1)
	popN(t, q, 1)
	require.True(t, q.near)
	require.False(t, spins(q), "with one processor the producers cannot run meanwhile")
}

// The Receiver paces only at the start of a batch, and a Drain or an idle
// Receiver leaves nothing to pace for the next receive.
func TestReceiverUnpaces(t *testing.T) {
	tx, rx := New[int]()
	defer rx.Close()
	q := rx.c.q
	q.paced = true
	for i := range 3 {
		require.NoError(t, tx.Send(i))
	}
	got := 0
	for range rx.Drain() {
		got++
		require.False(t, q.judging, "no spin while values are held")
	}
	require.Equal(t, 3, got)
	require.False(t, q.near, "a Drain returns unpaced")
	require.Equal(t, uint8(1), q.wasted, "its last batch paced, for nothing")
	q.wasted, q.skip = 0, 0

	require.NoError(t, tx.Send(3))
	require.NoError(t, tx.Send(4))
	v, err := rx.TryRecv() // pops 4 ahead, from the run its reload found
	require.NoError(t, err)
	require.Equal(t, 3, v)
	require.True(t, q.near)
	paces := q.paces
	v, err = rx.TryRecv()
	require.NoError(t, err)
	require.Equal(t, 4, v)
	require.Equal(t, paces, q.paces, "no spin while a value is held ahead")
	require.False(t, q.near, "TryRecv's look ahead found nothing: idle, unpaced")
	_, err = rx.TryRecv()
	require.ErrorIs(t, err, ErrEmpty)
}

// The spin grows while the producers make several values during it but
// not a run of paceNear, up to paceSpinMax, and shrinks back towards
// paceSpin when they make one (slow producers: the spin only delays) or a
// run of 2*paceNear.
func TestPaceAdaptsItsLength(t *testing.T) {
	q := pacedQueue()
	// spinThenFind catches up, spins, and lets the reload after the spin
	// find n values.
	spinThenFind := func(n int) {
		t.Helper()
		require.True(t, spinsFromSegmentStart(t, q))
		for range n {
			q.Push(0)
		}
		popN(t, q, n)
	}
	spinThenFind(4)
	require.Equal(t, 2*paceSpin, q.spin)
	spinThenFind(4)
	require.Equal(t, 4*paceSpin, q.spin)
	spinThenFind(1)
	require.Equal(t, 2*paceSpin, q.spin)
	for range 10 {
		spinThenFind(4)
	}
	require.Equal(t, paceSpinMax, q.spin)
	spinThenFind(2 * paceNear)
	require.Equal(t, paceSpinMax/2, q.spin)
	for range 10 {
		spinThenFind(1)
	}
	require.Equal(t, paceSpin, q.spin)
}

// A pace never holds back values the consumer has seen: when the reload
// that caught up found more than the batch took, the next batch starts at
// once, and that is no opportunity for the backoff either.
func TestPaceNotWithValuesInSight(t *testing.T) {
	q := pacedQueue()
	for i := range 5 {
		q.Push(i)
	}
	_, ok := q.Pop() // its reload found a run of 5: close behind the producers
	require.True(t, ok)
	require.True(t, q.near)
	require.False(t, spins(q), "four values are known ready at the head")
	require.False(t, q.near)
	require.Zero(t, q.skip)
	popN(t, q, 4)
}

// The receive after ErrEmpty starts without spinning, whether it is a
// TryRecv or the first batch of a Drain (the usual edge-triggered loop:
// receive until ErrEmpty, Poll, receive again), and TryRecv never spins,
// even while a Drain in another goroutine is between paced batches.
func TestReceiverNoPaceAfterEmpty(t *testing.T) {
	tx, rx := New[int]()
	defer rx.Close()
	q := rx.c.q
	q.paced = true

	_, err := rx.TryRecv()
	require.ErrorIs(t, err, ErrEmpty)
	require.False(t, q.near, "ErrEmpty: the Receiver stops, so nothing is left to pace for")

	require.NoError(t, tx.Send(1))
	require.NoError(t, tx.Send(2))
	paces := q.paces
	var got []int
	for v := range rx.Drain() {
		if len(got) == 0 {
			require.Equal(t, paces, q.paces, "the first batch after ErrEmpty spun")
		}
		got = append(got, v)
	}
	require.Equal(t, []int{1, 2}, got)
	_, err = rx.TryRecv()
	require.ErrorIs(t, err, ErrEmpty)

	require.NoError(t, tx.Send(3))
	q.near = true // as a Drain in another goroutine leaves it between batches
	paces = q.paces
	v, err := rx.TryRecv()
	require.NoError(t, err)
	require.Equal(t, 3, v)
	require.Equal(t, paces, q.paces, "TryRecv spun")
}
