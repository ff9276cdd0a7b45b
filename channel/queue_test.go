package channel

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The queue: FIFO across many segments; segments are recycled, so
// a steady stream with a backlog allocates nothing, and after a burst the
// queue keeps at most maxFree spare segments.
func TestSegQueueRecycles(t *testing.T) {
	q := newSegQueue[int](4)
	next, want := 0, 0
	push := func(n int) {
		for range n {
			q.Push(next)
			next++
		}
	}
	pop := func(n int) {
		for range n {
			v, ok := q.Pop()
			require.True(t, ok)
			require.Equal(t, want, v)
			want++
		}
	}
	push(3 * segSize) // a backlog of three segments
	pop(segSize)
	bad := 0
	allocs := testing.AllocsPerRun(20, func() {
		for range 10 * segSize {
			q.Push(next)
			next++
			if v, ok := q.Pop(); !ok || v != want {
				bad++
			}
			want++
		}
	})
	require.Zero(t, bad, "values out of order")
	require.Zero(t, allocs, "allocations in steady state")

	push(1000 * segSize) // a burst
	pop(q.Len())
	_, ok := q.Pop()
	require.False(t, ok)
	require.True(t, q.oldest == q.headSeg, "every passed segment recycled")
	require.LessOrEqual(t, len(q.free), 4)
	require.Equal(t, 0, q.Len())
}

// A channel in steady use allocates at most once per segSize values (here
// nothing at all once warm), through Send and through TryRecv and Drain.
func TestChannelAllocations(t *testing.T) {
	tx, rx, err := NewBounded[int](4 * segSize)
	require.NoError(t, err)
	defer rx.Close()
	for i := range 2 * segSize {
		require.NoError(t, tx.Send(i))
	}
	allocs := testing.AllocsPerRun(20, func() {
		for i := range 8 * segSize {
			_ = tx.Send(i)
			if i%2 == 1 {
				_, _ = rx.TryRecv()
				for range rx.Drain() {
				}
			}
		}
	})
	require.LessOrEqual(t, allocs/(8*segSize), 1.0/segSize)
	require.Zero(t, allocs)
}

// Aborted slots are skipped and keep the order of the others.
func TestSegQueueAbort(t *testing.T) {
	q := newSegQueue[int](4)
	for i := range 3 * segSize {
		seg, k := q.reserve()
		if i%3 == 0 {
			q.abort(seg, k)
		} else {
			q.publish(seg, k, i)
		}
	}
	for i := range 3 * segSize {
		if i%3 == 0 {
			continue
		}
		v, ok := q.Pop()
		require.True(t, ok)
		require.Equal(t, i, v)
	}
	_, ok := q.Pop()
	require.False(t, ok)
}
