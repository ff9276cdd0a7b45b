package wheel

import (
	"unsafe"

	"github.com/unipoll/unipoll/internal/base/table"
)

// Pointers beside entries. An entry's key is 64 bits that the garbage
// collector does not look into, so a value that holds a pointer cannot
// travel in it alone: what it points to could be freed while the deadline
// waits. A Queue made to carry pointers (CarryPointers: package timer's
// values whose first word is a pointer, a *Request or a string) gives one
// pointer with each key (AddKey); the wheel keeps it in ptrs, an array
// indexed like the entries, which the collector scans, and hands it back
// with the key (RemoveKey, or TryRecvKey once it fired, through the
// owner's expiredPtrs ring). Keeping it beside the entry, rather than in
// a table of the Timer's own, spares a Set and a Cancel that table's
// allocation and the callbacks under mu (bench/GAPS.md, "Timers").
//
// The array has one chunk per chunk of the entries' table, made when the
// first pointer lands in it, so a wheel whose entries carry none (the
// Poll's delays, Timers of plain numbers) pays no memory and, per entry,
// one test of its owner's flag.
//
// Invariant 8 (mu held): every allocated entry of an owner that carries
// pointers has a place in ptrs, nil or not, which take clears when the
// entry is freed; every other place is nil. A chunk's n counts the
// entries with a place in it, and every chunk but chunk 0 with n == 0 is
// released (kept as the spare, or left to the collector).

// ptrChunk is the pointers of one chunk of the entries' table.
type ptrChunk struct {
	p [table.ChunkSize]unsafe.Pointer
	n int
}

// ptrSide is the array of pointers beside the entries.
type ptrSide struct {
	chunks []*ptrChunk // by table chunk; nil where no entry has a place
	// spare is one released chunk, every pointer nil, for the next chunk
	// that needs one: a pointer set and taken again and again at a
	// chunk's boundary does not allocate each time.
	spare *ptrChunk
}

// set puts p (nil or not) beside entry idx, a new entry of an owner that
// carries pointers. Small enough to be inlined into AddKey.
func (s *ptrSide) set(idx uint32, p unsafe.Pointer) {
	ci := int(idx / table.ChunkSize)
	for ci >= len(s.chunks) {
		s.chunks = append(s.chunks, nil)
	}
	c := s.chunks[ci]
	if c == nil {
		if c = s.spare; c != nil {
			s.spare = nil
		} else {
			c = new(ptrChunk)
		}
		s.chunks[ci] = c
	}
	c.p[idx%table.ChunkSize] = p
	c.n++
}

// take returns the pointer beside entry idx, which set gave a place, and
// clears that place; last says that the chunk, not chunk 0, has no place
// given any more, for the caller to release. Small enough for the
// compiler to inline into RemoveKey, which a call to release inside
// would not be.
func (s *ptrSide) take(idx uint32) (p unsafe.Pointer, last bool) {
	c := s.chunks[idx/table.ChunkSize]
	slot := &c.p[idx%table.ChunkSize]
	p, *slot = *slot, nil
	c.n--
	return p, c.n == 0 && idx >= table.ChunkSize
}

// free is take, then release if the chunk is left with no place given.
func (s *ptrSide) free(idx uint32) unsafe.Pointer {
	p, last := s.take(idx)
	if last {
		s.release(idx / table.ChunkSize)
	}
	return p
}

// release gives chunk ci, which no entry has a place in, back: to the
// spare, or to the collector if there is a spare already. Chunk 0 stays,
// as the table keeps its own. Kept out of line: inlined into RemoveKey,
// where it is rare, it cost every Set+Cancel pair 10 instructions
// (callgrind, 2026-11-27), the compiler's moves around it.
//
//go:noinline
func (s *ptrSide) release(ci uint32) {
	if s.spare == nil {
		s.spare = s.chunks[ci]
	}
	s.chunks[ci] = nil
	for len(s.chunks) > 0 && s.chunks[len(s.chunks)-1] == nil {
		s.chunks = s.chunks[:len(s.chunks)-1]
	}
	if len(s.chunks) < cap(s.chunks)/4 {
		s.chunks = append([]*ptrChunk(nil), s.chunks...)
	}
}

// count returns the number of places given to entries and the number of
// chunks that hold them (tests).
func (s *ptrSide) count() (n, chunks int) {
	for _, c := range s.chunks {
		if c != nil {
			n += c.n
			chunks++
		}
	}
	return n, chunks
}
