package wheel

import (
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/base/table"
)

// A Queue that carries pointers gets each one back with its key: from
// RemoveKey while pending, from TryRecvKey once it fired, in deadline
// order, nil ones too. A Queue of plain keys on the same wheel is not
// touched. Places of pointers cover every chunk the burst spread over
// while it is pending, and are given back (but chunk 0's) once its
// entries are gone; Close frees the places of the entries it drops.
func TestQueueCarriesPointers(t *testing.T) {
	w, plain := newTestWheel(t, time.Millisecond, 16, 0)
	readable := false
	q := newTestQueue(0, &readable)
	q.CarryPointers()
	undone := 0
	require.NoError(t, bindTo(q, w, &undone))

	const n = 3 * table.ChunkSize // three chunks of entries
	vals := make([]int, n)
	ids := make([]ID, n)
	for i := range n {
		vals[i] = i
		p := unsafe.Pointer(&vals[i])
		if i%7 == 0 {
			p = nil // a nil pointer has a place like any other
		}
		var err error
		ids[i], err = q.AddKey(time.Hour+time.Duration(i)*time.Millisecond, uint64(i), p, 0, nil)
		require.NoError(t, err)
		if i%3 == 0 {
			w.add(plain, uint64(i), 5*time.Hour) // interleaved: the chunks are shared
		}
	}
	requirePlaces(t, w, n)
	w.Expire() // place them
	require.NoError(t, w.Check())

	want := func(i int) unsafe.Pointer {
		if i%7 == 0 {
			return nil
		}
		return unsafe.Pointer(&vals[i])
	}
	for i := 0; i < n; i += 2 {
		key, p, ok := q.RemoveKey(ids[i])
		require.True(t, ok)
		require.Equal(t, uint64(i), key)
		require.Equal(t, want(i), p, "pointer of entry %d", i)
		_, _, ok = q.RemoveKey(ids[i])
		require.False(t, ok, "removed twice")
	}
	requirePlaces(t, w, n/2)

	w.Advance(2 * time.Hour)
	w.Expire()
	require.True(t, readable)
	requirePlaces(t, w, 0) // fired: the pointers wait in the expired ring
	for i := 1; i < n; i += 2 {
		key, p, ok := q.TryRecvKey()
		require.True(t, ok)
		require.Equal(t, uint64(i), key, "deadline order")
		require.Equal(t, want(i), p, "pointer of entry %d", i)
	}
	_, _, ok := q.TryRecvKey()
	require.False(t, ok)
	require.False(t, readable)
	_, chunks := w.ptrs.count()
	require.Equal(t, 1, chunks, "a burst's chunks of pointers are given back, but chunk 0")

	for i := range 2 * table.ChunkSize {
		_, err := q.AddKey(time.Hour, uint64(i), unsafe.Pointer(&vals[i]), 0, nil)
		require.NoError(t, err)
	}
	requirePlaces(t, w, 2*table.ChunkSize)
	require.NoError(t, q.Close(func() error { return nil }))
	requirePlaces(t, w, 0)
	_, chunks = w.ptrs.count()
	require.LessOrEqual(t, chunks, 1)
	require.Equal(t, int64(n/3), w.Pending(), "the plain Queue's entries stay")
}

// requirePlaces checks the wheel (invariant 8 among the rest) and that n
// entries have a place beside them.
func requirePlaces(t *testing.T, w *Wheel, n int) {
	t.Helper()
	require.NoError(t, w.Check())
	w.mu.Lock()
	got, _ := w.ptrs.count()
	w.mu.Unlock()
	require.Equal(t, n, got)
}

// A chunk of pointers emptied and needed again comes from the spare: an
// entry set and cancelled again and again at a chunk's boundary does not
// allocate.
func TestPointerChunkSpare(t *testing.T) {
	w, _ := newTestWheel(t, time.Millisecond, 16, 0)
	readable := false
	q := newTestQueue(0, &readable)
	q.CarryPointers()
	undone := 0
	require.NoError(t, bindTo(q, w, &undone))
	v := 1
	for range table.ChunkSize { // fills chunk 0
		_, err := q.AddKey(time.Hour, 0, unsafe.Pointer(&v), 0, nil)
		require.NoError(t, err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		id, err := q.AddKey(time.Hour, 0, unsafe.Pointer(&v), 0, nil)
		if err != nil {
			panic(err)
		}
		if _, _, ok := q.RemoveKey(id); !ok {
			panic("not removed")
		}
	})
	require.Zero(t, allocs)
	require.NoError(t, w.Check())
}
