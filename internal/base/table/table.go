// Package table is the one index-and-generation table of unipoll: records
// of type E in slots addressed by a 32-bit index, each in-use slot
// stamped with a generation, so that a Handle (index, generation) names one
// incarnation of a slot and a stale Handle, kept after its record was
// freed and its slot reused, names nothing: the one such table for the
// Poll's descriptors, the timing wheel's entries, the eventloop's sources
// and the tokens package.
//
// Slots live in chunks of ChunkSize that never move, so a record's
// address stays valid while the table grows. Alloc takes the free slot
// with the lowest index (or the one Free cached, a cache of one for
// records that come and go one at a time), so records in use gather in
// the low chunks; Take
// claims a slot the caller names (a descriptor number). Generations come
// from one counter per table, in [1, MaxGen], so they also order
// allocations: two Handles of one table compare by age until the counter
// wraps, after MaxGen allocations.
//
// A Table is not safe for concurrent use: its owner serialises every call
// but Load, which any goroutine may call at any time on a table that does
// not Shrink.
package table

import (
	"errors"
	"iter"
	"math/bits"
	"sync/atomic"
)

const (
	// ChunkSize is the number of slots in one chunk.
	ChunkSize = 1 << chunkBits
	// MaxLen is the number of slots a table can address: indexes stay
	// below 2^31, and so do generations (MaxGen), so that a packed Handle
	// leaves bit 63 free for a caller's tag and never equals a reserved
	// all-ones value.
	MaxLen = 1 << 31
	// MaxGen is the largest generation.
	MaxGen = 1<<31 - 1

	chunkBits  = 10
	chunkMask  = ChunkSize - 1
	chunkWords = ChunkSize / 64
)

var (
	// ErrFull is returned by Alloc when every one of MaxLen slots is in
	// use, and by Take for an index at or above MaxLen.
	ErrFull = errors.New("table: no slot left (at most 2^31)")
	// ErrInUse is returned by Take for a slot that is already in use.
	ErrInUse = errors.New("table: slot in use")
)

// Handle names one incarnation of a slot. The zero Handle names nothing.
type Handle struct {
	Idx uint32
	Gen uint32
}

// Pack returns h as Gen<<32 | Idx: bit 63 is clear, and a Handle that
// names something is never zero.
func (h Handle) Pack() uint64 { return uint64(h.Gen)<<32 | uint64(h.Idx) }

// Unpack is the inverse of Pack.
func Unpack(v uint64) Handle { return Handle{Idx: uint32(v), Gen: uint32(v >> 32)} }

type slot[E any] struct {
	gen uint32 // 0 while the slot is free
	val E
}

type chunk[E any] [ChunkSize]slot[E]

// Table holds records of type E. The zero Table is empty and ready to use.
//
// Invariants (the owner's):
//   - chunks[c] is nil or holds meta[c].used claimed slots: a slot is
//     claimed iff its bit in meta[c].free is clear. A claimed slot is in
//     use iff its gen is not 0; the one claimed slot not in use, if any,
//     is hot (the cache of one). used counts the slots in use.
//   - Bit c of open is set iff chunk c can take a record: it is nil (and
//     c < len(chunks)) or has a free slot.
//   - Without Shrink, every chunk is allocated (none is nil) and never
//     dropped nor moved, and *dir, once published, is a prefix of chunks:
//     Load on any goroutine sees chunks the owner published and nothing
//     else.
//   - With Shrink, chunks has no nil chunk at its end and chunk 0, once
//     allocated, stays until Reset.
type Table[E any] struct {
	// Shrink, set before the first use, gives a chunk left empty after a
	// burst back to the garbage collector (but chunk 0, which a table in
	// light use lives in, and one empty chunk kept as a spare, so that a
	// load that hovers around a chunk boundary does not allocate and free
	// a chunk each time). A spare chunk may come back at another index,
	// so a table that shrinks must not be read with Load.
	Shrink bool

	chunks []*chunk[E]
	meta   []chunkMeta
	open   []uint64
	used   int
	gen    uint32 // the last generation handed out
	// hot is the index + 1 of a slot Free freed and kept claimed in its
	// chunk (bitmap and meta count it as in use; its gen is 0, so no
	// Handle names it, and used does not count it), for the next Alloc:
	// a cache of one. 0 for none.
	hot   uint32
	spare *chunk[E]
	dir   atomic.Pointer[[]*chunk[E]]
}

type chunkMeta struct {
	free [chunkWords]uint64
	used int
	hint int // the lowest word of free that may have a set bit
}

// Len returns the number of slots in use.
func (t *Table[E]) Len() int { return t.used }

// Span returns one more than the highest index a slot in use may have:
// the chunks the table addresses, times ChunkSize.
func (t *Table[E]) Span() uint32 { return uint32(len(t.chunks)) << chunkBits }

// Chunks returns the number of chunks allocated, for tests and statistics.
func (t *Table[E]) Chunks() int {
	n := 0
	for _, c := range t.chunks {
		if c != nil {
			n++
		}
	}
	return n
}

// Alloc takes the slot Free cached (the first one freed since an Alloc or
// Take took the cache), else the free slot with the lowest index, stamps
// it with a new generation and returns its Handle and record. The cache
// serves a table whose records come and go one at a time (a timeout set
// and cancelled): no search of the bitmaps, and the record is warm. The record is as the last
// Free left it (Free does not clear it, so that a record may keep what a
// reader without a lock checks across incarnations), or zero in a new
// chunk: the caller sets every field it relies on.
func (t *Table[E]) Alloc() (Handle, *E, error) {
	if hot := t.hot; hot != 0 {
		t.hot = 0
		return t.stamp(hot - 1)
	}
	ci := t.firstOpen()
	if ci == len(t.chunks) {
		if ci<<chunkBits >= MaxLen {
			return Handle{}, nil, ErrFull
		}
		t.extend(ci)
	}
	m := &t.meta[ci]
	if t.chunks[ci] == nil {
		t.fill(ci)
	}
	w := m.hint
	for m.free[w] == 0 {
		w++
	}
	m.hint = w
	b := bits.TrailingZeros64(m.free[w])
	return t.claim(ci, w<<6|b)
}

// Take claims slot idx, which the caller names (a descriptor number), as
// Alloc does a slot of its choosing. It returns ErrInUse if the slot is in
// use and ErrFull if idx is MaxLen or more.
func (t *Table[E]) Take(idx uint32) (Handle, *E, error) {
	if idx >= MaxLen {
		return Handle{}, nil, ErrFull
	}
	ci := int(idx >> chunkBits)
	for len(t.chunks) <= ci {
		t.extend(len(t.chunks))
	}
	if t.chunks[ci] == nil {
		t.fill(ci)
	}
	i := int(idx & chunkMask)
	if idx+1 == t.hot {
		t.hot = 0
		return t.stamp(idx)
	}
	if t.meta[ci].free[i>>6]&(1<<(i&63)) == 0 {
		return Handle{}, nil, ErrInUse
	}
	return t.claim(ci, i)
}

// stamp gives slot idx, claimed in its chunk already (hot), a new
// generation and counts it in use.
func (t *Table[E]) stamp(idx uint32) (Handle, *E, error) {
	t.used++
	t.gen = t.NextGen()
	s := &t.chunks[idx>>chunkBits][idx&chunkMask]
	s.gen = t.gen
	return Handle{Idx: idx, Gen: t.gen}, &s.val, nil
}

// claim marks free slot i of chunk ci in use with a new generation.
func (t *Table[E]) claim(ci, i int) (Handle, *E, error) {
	m := &t.meta[ci]
	m.free[i>>6] &^= 1 << (i & 63)
	m.used++
	t.used++
	if m.used == ChunkSize {
		t.setOpen(ci, false)
	}
	t.gen = t.NextGen()
	s := &t.chunks[ci][i]
	s.gen = t.gen
	return Handle{Idx: uint32(ci<<chunkBits | i), Gen: t.gen}, &s.val, nil
}

// NextGen returns the generation that the next Alloc, Take or Renew will
// stamp, for a caller that must publish a Handle (a kernel key) before it
// knows that the slot's change can be made.
func (t *Table[E]) NextGen() uint32 {
	if t.gen >= MaxGen {
		return 1
	}
	return t.gen + 1
}

// Renew stamps the slot h names with a new generation, leaving its record,
// so that every earlier Handle of it names nothing, and returns the new
// Handle; or false if h names nothing.
func (t *Table[E]) Renew(h Handle) (Handle, bool) {
	if _, ok := t.Lookup(h); !ok {
		return Handle{}, false
	}
	t.gen = t.NextGen()
	t.chunks[h.Idx>>chunkBits][h.Idx&chunkMask].gen = t.gen
	return Handle{Idx: h.Idx, Gen: t.gen}, true
}

// Lookup returns the record h names, or false if h names nothing: its slot
// is free, or holds a later incarnation.
func (t *Table[E]) Lookup(h Handle) (*E, bool) {
	ci := int(h.Idx >> chunkBits)
	if ci >= len(t.chunks) || t.chunks[ci] == nil {
		return nil, false
	}
	s := &t.chunks[ci][h.Idx&chunkMask]
	if s.gen != h.Gen || h.Gen == 0 {
		return nil, false
	}
	return &s.val, true
}

// Current returns the incarnation in slot idx and its record, or false if
// the slot is free.
func (t *Table[E]) Current(idx uint32) (Handle, *E, bool) {
	ci := int(idx >> chunkBits)
	if ci >= len(t.chunks) || t.chunks[ci] == nil {
		return Handle{}, nil, false
	}
	s := &t.chunks[ci][idx&chunkMask]
	if s.gen == 0 {
		return Handle{}, nil, false
	}
	return Handle{Idx: idx, Gen: s.gen}, &s.val, true
}

// At returns the record in slot idx, which must be in use: the owner's
// lookup by index alone, for a structure that links its records by index
// and has checked the Handle once already (the timing wheel's slots).
func (t *Table[E]) At(idx uint32) *E {
	return &t.chunks[idx>>chunkBits][idx&chunkMask].val
}

// Load returns the record in slot idx, in use or not, or nil if the table
// has never had a chunk for it. Any goroutine may call it while the owner
// uses the table, on a table that does not Shrink: the record's address
// is stable, and what it holds is the caller's to synchronise (the
// generation is not read).
func (t *Table[E]) Load(idx uint32) *E {
	d := t.dir.Load()
	ci := int(idx >> chunkBits)
	if d == nil || ci >= len(*d) {
		return nil
	}
	c := (*d)[ci]
	if c == nil {
		return nil
	}
	return &c[idx&chunkMask].val
}

// Free returns the slot h names to the table, leaving its record as it is,
// and reports whether h named something. If no slot is cached (hot), it
// keeps this one claimed for the next Alloc.
func (t *Table[E]) Free(h Handle) bool {
	if _, ok := t.Lookup(h); !ok {
		return false
	}
	t.FreeFound(h)
	return true
}

// FreeFound is Free of a Handle the caller has just found naming a record
// (Lookup, Current), without looking again.
func (t *Table[E]) FreeFound(h Handle) {
	t.chunks[h.Idx>>chunkBits][h.Idx&chunkMask].gen = 0
	t.used--
	if t.hot == 0 {
		t.hot = h.Idx + 1
		return
	}
	t.release(h.Idx)
}

// release returns slot idx, whose gen is 0 already, to its chunk's bitmap.
func (t *Table[E]) release(idx uint32) {
	ci := int(idx >> chunkBits)
	i := int(idx & chunkMask)
	m := &t.meta[ci]
	m.free[i>>6] |= 1 << (i & 63)
	m.hint = min(m.hint, i>>6)
	m.used--
	if m.used == ChunkSize-1 {
		t.setOpen(ci, true) // it was full
	}
	if hot := t.hot; t.Shrink && m.used == 1 && hot != 0 && int((hot-1)>>chunkBits) == ci && ci > 0 {
		t.hot = 0 // the cached slot alone would keep the chunk
		t.release(hot - 1)
		return
	}
	if t.Shrink && m.used == 0 && ci > 0 {
		t.releaseChunk(ci) // chunk 0 stays: a table in light use never thrashes
	}
}

// All yields every slot in use, by index, with its Handle and record. The
// loop's body may Free the slot it is given.
func (t *Table[E]) All() iter.Seq2[Handle, *E] {
	return func(yield func(Handle, *E) bool) {
		for ci := 0; ci < len(t.chunks); ci++ {
			c := t.chunks[ci]
			if c == nil || t.meta[ci].used == 0 {
				continue
			}
			for i := range c {
				if s := &c[i]; s.gen != 0 {
					if !yield(Handle{Idx: uint32(ci<<chunkBits | i), Gen: s.gen}, &s.val) {
						return
					}
				}
			}
		}
	}
}

// Reset frees every slot and drops every chunk. The generation counter
// goes on, so a Handle from before Reset names nothing after it.
func (t *Table[E]) Reset() {
	*t = Table[E]{Shrink: t.Shrink, gen: t.gen}
}
