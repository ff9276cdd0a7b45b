package channel

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// Values a Drain hands back when its loop stops early stay in the
// Receiver, first in line, and a bounded channel has counted them as
// received already: they take no capacity, and taking them later (by
// TryRecv or by another Drain) gives none back a second time. Len counts
// them until they are taken.

// trySendAll sends from next on until TrySend returns ErrFull, and
// returns how many it accepted.
func trySendAll(t *testing.T, tx *Sender[int], next *int) int {
	t.Helper()
	n := 0
	for {
		err := tx.TrySend(*next)
		if errors.Is(err, ErrFull) {
			return n
		}
		require.NoError(t, err)
		*next++
		n++
	}
}

func TestHandedBackValuesTakeNoCapacity(t *testing.T) {
	for _, takeBy := range []string{"TryRecv", "Drain"} {
		t.Run(takeBy, func(t *testing.T) {
			handedBack(t, takeBy == "Drain")
		})
	}
}

func handedBack(t *testing.T, byDrain bool) {
	const capacity = 4
	tx, rx, err := NewBounded[int](capacity)
	require.NoError(t, err)
	defer rx.Close()
	next := 0
	var want []int // what the Receiver holds, in order
	fill := func(accept int, why string) {
		t.Helper()
		from := next
		require.Equal(t, accept, trySendAll(t, tx, &next), "TrySends accepted %s", why)
		for v := from; v < next; v++ {
			want = append(want, v)
		}
		require.Equal(t, len(want), rx.Len(), "Len %s", why)
	}
	take := func(n int, drain bool, why string) {
		t.Helper()
		var got []int
		if drain {
			for v := range rx.Drain() {
				got = append(got, v)
				if len(got) == n {
					break
				}
			}
		} else {
			for range n {
				v, err := rx.TryRecv()
				require.NoError(t, err)
				got = append(got, v)
			}
		}
		require.Equal(t, want[:n], got, "values taken %s", why)
		want = want[n:]
		require.Equal(t, len(want), rx.Len(), "Len after taking %d %s", n, why)
	}

	fill(capacity, "into an empty channel")
	// One batch gives back all four; three of them are handed back.
	take(1, true, "by a Drain stopped after one value")
	if byDrain {
		// A batch of handed-back values only gives back nothing.
		take(1, true, "by a Drain whose batch was all handed back")
		fill(capacity, "after a Drain of handed-back values only")
		// A batch of both gives back the capacity of the others.
		take(2, true, "by a Drain of two handed back and four new values")
		fill(capacity, "after a Drain of two handed back and four new values")
		require.Equal(t, 2*capacity, rx.Len(), "Len may exceed Cap while values are handed back")
	} else {
		fill(capacity, "after the Drain's batch gave the capacity back")
		require.Equal(t, 2*capacity-1, rx.Len(), "Len may exceed Cap while values are handed back")
		// Taking handed-back values makes no room: the batch gave it.
		take(2, false, "of the three handed back")
		fill(0, "after taking handed-back values")
		take(1, false, "the last handed-back value")
		fill(0, "after taking every handed-back value")
		// Taking a value sent since makes room for one.
		take(1, false, "sent after the Drain")
		fill(1, "after taking one value sent after the Drain")
	}

	// Everything received: the whole capacity is free again, no more.
	for range rx.Drain() {
	}
	_, err = rx.TryRecv()
	require.ErrorIs(t, err, ErrEmpty)
	want = nil
	require.Equal(t, 0, rx.Len())
	fill(capacity, "into the emptied channel")
	take(capacity, byDrain, "to the end")
	fill(capacity, "after the last values")
}

// A handed-back rest longer than a batch, Drains stopped at every place in
// their batch: Len is exact after every step, and the capacity given back
// adds up.
func TestHandedBackLen(t *testing.T) {
	const capacity = 2*drainBatch + 3
	for _, stopAt := range []int{1, 2, drainBatch - 1, drainBatch, drainBatch + 1, capacity} {
		t.Run(fmt.Sprint(stopAt), func(t *testing.T) {
			tx, rx, err := NewBounded[int](capacity)
			require.NoError(t, err)
			defer rx.Close()
			next := 0
			require.Equal(t, capacity, trySendAll(t, tx, &next))
			got := 0
			for range rx.Drain() {
				got++
				if got == stopAt {
					break
				}
			}
			require.Equal(t, capacity-got, rx.Len())
			// The batches the Drain took gave back their capacity: whole
			// batches of drainBatch, the last one cut short by the stop.
			batches := min((got+drainBatch-1)/drainBatch*drainBatch, capacity)
			require.Equal(t, batches, trySendAll(t, tx, &next))
			require.Equal(t, capacity-got+batches, rx.Len())
			v, err := rx.TryRecv()
			require.NoError(t, err)
			require.Equal(t, got, v)
			require.Equal(t, capacity-got+batches-1, rx.Len())
			room := 0 // a handed-back value was taken
			if got == batches {
				room = 1 // the Drain stopped at its batch's end: a value still queued
			}
			require.Equal(t, room, trySendAll(t, tx, &next))
		})
	}
}
