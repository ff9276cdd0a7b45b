package wheel

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Closing an owner frees its entries at once, staged or in any level, and
// no other owner's: the wheel's structure stays true, the other owner's
// entries still fire, and the id is free.
func TestCloseOwnerFreesItsEntries(t *testing.T) {
	w, a := newTestWheel(t, time.Millisecond, 8, 0)
	b, err := w.newOwner(0, false, func(bool) {}, errClosed)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(1, 2))
	var bs []ID
	for i := range 3000 {
		d := time.Duration(rng.Int64N(int64(time.Hour)))
		if i%2 == 0 {
			w.add(a, uint64(i), d)
		} else {
			id, _ := w.add(b, uint64(i), d)
			bs = append(bs, id)
		}
		if i == 1000 {
			w.Expire() // places the first thousand: the rest stay staged
		}
	}
	for _, id := range bs[:100] {
		_, ok := w.remove(b, id)
		require.True(t, ok)
	}
	w.mu.Lock()
	require.Equal(t, 1500, w.closeOwner(a))
	w.mu.Unlock()
	require.NoError(t, w.Check())
	require.Equal(t, int64(1400), w.Pending(), "only b's entries are left")
	id, err := w.newOwner(0, false, func(bool) {}, errClosed)
	require.NoError(t, err)
	require.Equal(t, a, id, "the closed owner's id is free at once")

	w.Advance(2 * time.Hour)
	w.Expire()
	n := 0
	for {
		if _, ok := w.take(b); !ok {
			break
		}
		n++
	}
	require.Equal(t, 1400, n, "b's entries all fired")
	_, ok := w.take(id)
	require.False(t, ok, "an entry of the closed owner fired into its successor")
}

// An owner's entries in table chunks further apart than its chunk filter
// has bits are all found: the filter folds chunk numbers, it does not
// drop them.
func TestCloseOwnerPastTheFilter(t *testing.T) {
	w, a := newTestWheel(t, time.Millisecond, MaxSlots, 0)
	b, err := w.newOwner(0, false, func(bool) {}, errClosed)
	require.NoError(t, err)
	const chunks = filterChunks + 4
	for i := range chunks * 1024 {
		owner := b
		if i%(filterChunks*1024) == 5 { // chunk 0 and chunk filterChunks
			owner = a
		}
		w.add(owner, uint64(i), time.Hour)
	}
	w.mu.Lock()
	require.Equal(t, 2, w.closeOwner(a))
	w.mu.Unlock()
	require.NoError(t, w.Check())
	require.Equal(t, int64(chunks*1024-2), w.Pending())
}
