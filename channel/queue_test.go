package channel

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/polltest"
	"github.com/unipoll/unipoll/poll"
)

// sliceQueue is a caller's Queue: a mutex and a slice.
type sliceQueue[T any] struct {
	mu   sync.Mutex
	vals []T
}

func newSliceQueue[T any]() *sliceQueue[T] { return &sliceQueue[T]{} }

func (q *sliceQueue[T]) Push(v T) {
	q.mu.Lock()
	q.vals = append(q.vals, v)
	q.mu.Unlock()
}

func (q *sliceQueue[T]) Pop() (T, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var zero T
	if len(q.vals) == 0 {
		return zero, false
	}
	v := q.vals[0]
	q.vals[0] = zero
	q.vals = q.vals[1:]
	return v, true
}

func (q *sliceQueue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.vals)
}

// A channel over a caller's Queue behaves as one over the built-in queue:
// values in order through a Poll, disconnection after the last value.
func TestNewWithQueue(t *testing.T) {
	for _, capacity := range []int{0, 2} {
		p := polltest.New(t)
		q := newSliceQueue[string]()
		tx, rx, err := NewWithQueue[string](q, capacity)
		require.NoError(t, err)
		defer rx.Close()
		require.Equal(t, capacity, tx.Cap())
		require.NoError(t, p.Register(rx, rxTok, poll.Readable, poll.Edge))
		require.NoError(t, tx.Send("a"))
		require.NoError(t, tx.Send("b"))
		if capacity > 0 {
			require.ErrorIs(t, tx.TrySend("c"), ErrFull)
		}
		require.Equal(t, 2, rx.Len())
		waitEvent(t, p, rxTok)
		got, err := recvAll(t, rx)
		require.ErrorIs(t, err, ErrEmpty)
		require.Equal(t, []string{"a", "b"}, got)
		require.NoError(t, tx.Send("c"))
		require.NoError(t, tx.Close())
		waitEvent(t, p, rxTok)
		got, err = recvAll(t, rx)
		require.ErrorIs(t, err, ErrDisconnected)
		require.Equal(t, []string{"c"}, got)
		require.Equal(t, 0, q.Len())
	}
}

// The built-in queue: FIFO across many segments; segments are recycled, so
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
