// Package slab is a chunked slab of fixed-size records addressed by 32-bit
// indexes, for structures that link records by index rather than by
// pointer (the timing wheel, the timer package's values).
//
// Records live in chunks of ChunkSize. Alloc always takes the free record
// with the lowest index, so records in use gather in the low chunks, and a
// chunk left empty after a burst is given back to the garbage collector
// (one empty chunk is kept as a spare, so a load that hovers around a
// chunk boundary does not allocate and free a chunk each time). The cost
// per record beyond the record itself is one bit.
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
// Invariants:
//   - chunks[c] is nil or holds used records, and used counts them all.
//   - Bit c of open is set iff chunk c can take a record: it is nil (and
//     c < len(chunks)) or it has a free record.
//   - In a chunk, bit i of free is set iff record i is free; a free record
//     holds the zero E, so it pins nothing for the garbage collector.
//   - chunks has no nil chunk at its end.
type Slab[E any] struct {
	chunks []*chunk[E]
	open   []uint64
	used   int
	spare  *chunk[E]
}

type chunk[E any] struct {
	items [ChunkSize]E
	free  [chunkWords]uint64
	used  int
	hint  int // the lowest word of free that may have a set bit
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

// Alloc takes the free record with the lowest index and returns its index
// and address. The record holds the zero E.
func (s *Slab[E]) Alloc() (uint32, *E) {
	ci := s.firstOpen()
	if ci == len(s.chunks) {
		s.chunks = append(s.chunks, nil)
		s.setOpen(ci, true)
	}
	c := s.chunks[ci]
	if c == nil {
		c = s.newChunk()
		s.chunks[ci] = c
	}
	w := c.hint
	for c.free[w] == 0 {
		w++
	}
	c.hint = w
	b := bits.TrailingZeros64(c.free[w])
	c.free[w] &^= 1 << b
	c.used++
	s.used++
	if c.used == ChunkSize {
		s.setOpen(ci, false)
	}
	i := w<<6 | b
	return uint32(ci<<chunkBits | i), &c.items[i]
}

// Get returns the address of record idx, which must be in use.
func (s *Slab[E]) Get(idx uint32) *E {
	return &s.chunks[idx>>chunkBits].items[idx&chunkMask]
}

// Valid reports whether idx names a record in use.
func (s *Slab[E]) Valid(idx uint32) bool {
	ci := int(idx >> chunkBits)
	if ci >= len(s.chunks) || s.chunks[ci] == nil {
		return false
	}
	i := idx & chunkMask
	return s.chunks[ci].free[i>>6]&(1<<(i&63)) == 0
}

// Free returns record idx, which must be in use, to the slab and clears
// it.
func (s *Slab[E]) Free(idx uint32) {
	ci := int(idx >> chunkBits)
	c := s.chunks[ci]
	i := int(idx & chunkMask)
	var zero E
	c.items[i] = zero
	c.free[i>>6] |= 1 << (i & 63)
	c.hint = min(c.hint, i>>6)
	c.used--
	s.used--
	s.setOpen(ci, true)
	if c.used == 0 {
		s.release(ci)
	}
}

// Reset frees every record and every chunk.
func (s *Slab[E]) Reset() { *s = Slab[E]{} }

// release gives chunk ci's memory back: to the spare, or to the garbage
// collector if there is a spare already.
func (s *Slab[E]) release(ci int) {
	c := s.chunks[ci]
	s.chunks[ci] = nil
	if s.spare == nil {
		s.spare = c // still clear: every record is free
	}
	for len(s.chunks) > 0 && s.chunks[len(s.chunks)-1] == nil {
		last := len(s.chunks) - 1
		s.setOpen(last, false)
		s.chunks = s.chunks[:last]
	}
	if len(s.chunks) < cap(s.chunks)/4 {
		s.chunks = append([]*chunk[E](nil), s.chunks...)
		s.open = append([]uint64(nil), s.open[:(len(s.chunks)+63)/64]...)
	}
}

func (s *Slab[E]) newChunk() *chunk[E] {
	if c := s.spare; c != nil {
		s.spare = nil
		return c
	}
	c := new(chunk[E])
	for i := range c.free {
		c.free[i] = ^uint64(0)
	}
	return c
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
