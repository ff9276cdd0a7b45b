// Package slab is a chunked slab of fixed-size records addressed by 32-bit
// indexes, for structures that link records by index rather than by
// pointer (the timing wheel, the timer package's values).
//
// Records live in chunks of ChunkSize. Alloc takes the free record with
// the lowest index (or the one Free cached, a cache of one), so records in
// use gather in the low chunks, and a chunk left empty after a burst is
// given back to the garbage collector (but chunk 0, which a slab in light
// use lives in, and one empty chunk kept as a spare, so that a load that
// hovers around a chunk boundary does not allocate and free a chunk each
// time). The cost per record beyond the record itself is one bit.
//
// A Slab is not safe for concurrent use: its owner serialises access.
package slab

import "math/bits"

// ChunkSize is the number of records in one chunk.
const ChunkSize = 1 << chunkBits

const (
	chunkBits  = 10
	chunkMask  = ChunkSize - 1
	chunkWords = ChunkSize / 64
)

// Slab holds records of type E. The zero Slab is empty and ready to use.
//
// A chunk's records are one allocation of exactly ChunkSize records, so
// that it fills the allocator's size class (a chunk of 32-byte records is
// four 8 KiB pages); the free bitmap and counts of each chunk live apart,
// in meta.
//
// Invariants:
//   - chunks[c] is nil or holds meta[c].used claimed records: those in
//     use, and hot (the cache of one) if it is in chunk c; used counts
//     those in use.
//   - Bit c of open is set iff chunk c can take a record: it is nil (and
//     c < len(chunks)) or it has a free record.
//   - In meta[c].free, bit i is set iff record i is free and not hot; a
//     free record, and hot, hold the zero E, so they pin nothing for the
//     garbage collector.
//   - chunks has no nil chunk at its end; len(meta) == len(chunks); chunk 0,
//     once allocated, stays until Reset.
type Slab[E any] struct {
	chunks []*[ChunkSize]E
	meta   []chunkMeta
	open   []uint64
	used   int
	spare  *[ChunkSize]E
	// hot is the index + 1 of a record Free freed (it holds the zero E)
	// and kept claimed in its chunk (its bit and meta count it in use;
	// used does not), for the next Alloc: a cache of one. 0 for none.
	hot uint32
}

type chunkMeta struct {
	free [chunkWords]uint64
	used int
	hint int // the lowest word of free that may have a set bit
}

// Len returns the number of records in use.
func (s *Slab[E]) Len() int { return s.used }

// Chunks returns the number of chunks allocated, for tests and statistics.
func (s *Slab[E]) Chunks() int {
	n := 0
	for _, c := range s.chunks {
		if c != nil {
			n++
		}
	}
	return n
}

// Alloc takes the record Free cached (the first one freed since an Alloc
// took the cache), else the free record with the lowest index, and returns
// its index and address. The record holds the zero E. The cache serves
// records that come and go one at a time (a value set and cancelled): no
// search of the bitmaps, and the record is warm.
func (s *Slab[E]) Alloc() (uint32, *E) {
	if hot := s.hot; hot != 0 {
		s.hot = 0
		s.used++
		return hot - 1, &s.chunks[(hot-1)>>chunkBits][(hot-1)&chunkMask]
	}
	ci := s.firstOpen()
	if ci == len(s.chunks) {
		s.chunks = append(s.chunks, nil)
		s.meta = append(s.meta, chunkMeta{})
		s.setOpen(ci, true)
	}
	m := &s.meta[ci]
	if s.chunks[ci] == nil {
		s.chunks[ci] = s.newChunk()
		for i := range m.free {
			m.free[i] = ^uint64(0)
		}
		m.used, m.hint = 0, 0
	}
	w := m.hint
	for m.free[w] == 0 {
		w++
	}
	m.hint = w
	b := bits.TrailingZeros64(m.free[w])
	m.free[w] &^= 1 << b
	m.used++
	s.used++
	if m.used == ChunkSize {
		s.setOpen(ci, false)
	}
	i := w<<6 | b
	return uint32(ci<<chunkBits | i), &s.chunks[ci][i]
}

// Get returns the address of record idx, which must be in use.
func (s *Slab[E]) Get(idx uint32) *E {
	return &s.chunks[idx>>chunkBits][idx&chunkMask]
}

// Valid reports whether idx names a record in use.
func (s *Slab[E]) Valid(idx uint32) bool {
	ci := int(idx >> chunkBits)
	if ci >= len(s.chunks) || s.chunks[ci] == nil {
		return false
	}
	i := idx & chunkMask
	return s.meta[ci].free[i>>6]&(1<<(i&63)) == 0 && idx+1 != s.hot
}

// Free returns record idx, which must be in use, to the slab and clears
// it. If no record is cached (hot), it keeps this one for the next Alloc.
func (s *Slab[E]) Free(idx uint32) {
	var zero E
	s.chunks[idx>>chunkBits][idx&chunkMask] = zero
	s.used--
	if s.hot == 0 {
		s.hot = idx + 1
		return
	}
	s.unclaim(idx)
}

// unclaim returns record idx, cleared already, to its chunk's bitmap.
func (s *Slab[E]) unclaim(idx uint32) {
	ci := int(idx >> chunkBits)
	i := int(idx & chunkMask)
	m := &s.meta[ci]
	m.free[i>>6] |= 1 << (i & 63)
	m.hint = min(m.hint, i>>6)
	m.used--
	if m.used == ChunkSize-1 {
		s.setOpen(ci, true) // it was full
	}
	if hot := s.hot; m.used == 1 && hot != 0 && int((hot-1)>>chunkBits) == ci && ci > 0 {
		s.hot = 0 // the cached record alone would keep the chunk
		s.unclaim(hot - 1)
		return
	}
	if m.used == 0 && ci > 0 {
		s.release(ci) // chunk 0 stays: a slab in light use never thrashes
	}
}

// Reset frees every record and every chunk.
func (s *Slab[E]) Reset() { *s = Slab[E]{} }

// release gives chunk ci's memory back: to the spare, or to the garbage
// collector if there is a spare already. Chunk 0 is never released.
func (s *Slab[E]) release(ci int) {
	if s.spare == nil {
		s.spare = s.chunks[ci] // every record is clear already
	}
	s.chunks[ci] = nil
	for len(s.chunks) > 0 && s.chunks[len(s.chunks)-1] == nil {
		last := len(s.chunks) - 1
		s.setOpen(last, false)
		s.chunks = s.chunks[:last]
		s.meta = s.meta[:last]
	}
	if len(s.chunks) < cap(s.chunks)/4 {
		s.chunks = append([]*[ChunkSize]E(nil), s.chunks...)
		s.meta = append([]chunkMeta(nil), s.meta...)
		s.open = append([]uint64(nil), s.open[:(len(s.chunks)+63)/64]...)
	}
}

func (s *Slab[E]) newChunk() *[ChunkSize]E {
	if c := s.spare; c != nil {
		s.spare = nil
		return c
	}
	return new([ChunkSize]E)
}

// firstOpen returns the lowest chunk that can take a record, or
// len(chunks) if none can.
func (s *Slab[E]) firstOpen() int {
	for w, word := range s.open {
		if word != 0 {
			return w<<6 | bits.TrailingZeros64(word)
		}
	}
	return len(s.chunks)
}

func (s *Slab[E]) setOpen(ci int, open bool) {
	w := ci >> 6
	for w >= len(s.open) {
		s.open = append(s.open, 0)
	}
	if open {
		s.open[w] |= 1 << (ci & 63)
	} else {
		s.open[w] &^= 1 << (ci & 63)
	}
}
