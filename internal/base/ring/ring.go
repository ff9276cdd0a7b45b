// Package ring is the one first-in first-out ring of unipoll: a queue of
// values in a power-of-two buffer that grows by doubling, with no locking
// (its owner serialises access): the one ring for the Poll's held list, a
// TimerQueue's expired keys and the eventloop's run queue levels.
//
// Index arithmetic is a mask, not a modulo, because the buffer's length is
// always a power of two. A value taken by Pop is cleared in the buffer, so
// a ring of pointers does not keep what it handed out alive.
package ring

// minSize is the buffer length of a ring's first growth: one allocation
// where growing from nothing by ones would take several.
const minSize = 16

// Ring is a FIFO of T. The zero Ring is empty and ready to use. A Ring is
// not safe for concurrent use.
//
// Invariants: len(buf) is zero or a power of two; n <= len(buf); the
// values, oldest first, are buf[(head+i)&(len(buf)-1)] for i in [0, n);
// every other element of buf is the zero T.
type Ring[T any] struct {
	buf  []T
	head int
	n    int
}

// Len returns the number of values in the ring.
func (r *Ring[T]) Len() int { return r.n }

// Cap returns the length of the ring's buffer: how many values it holds
// before it grows.
func (r *Ring[T]) Cap() int { return len(r.buf) }

// Push appends v, growing the buffer to twice its length if it is full.
func (r *Ring[T]) Push(v T) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = v
	r.n++
}

// Pop removes and returns the oldest value, or the zero T and false if the
// ring is empty.
func (r *Ring[T]) Pop() (T, bool) {
	var zero T
	if r.n == 0 {
		return zero, false
	}
	v := r.buf[r.head]
	r.buf[r.head] = zero
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	return v, true
}

// At returns the i-th oldest value, 0 <= i < Len, without removing it.
func (r *Ring[T]) At(i int) T { return r.buf[(r.head+i)&(len(r.buf)-1)] }

// Reset forgets every value and the buffer.
func (r *Ring[T]) Reset() { *r = Ring[T]{} }

// Trim gives the buffer back to the garbage collector if the ring is empty
// and its buffer is longer than keep: a burst that once filled a large
// buffer does not pin it for the ring's lifetime, while a ring in steady
// use keeps its buffer and does not allocate.
func (r *Ring[T]) Trim(keep int) {
	if r.n == 0 && len(r.buf) > keep {
		*r = Ring[T]{}
	}
}

func (r *Ring[T]) grow() {
	buf := make([]T, max(2*len(r.buf), minSize))
	// Called only when full, so the values are all of buf, in two runs:
	// from head to the end, then from the start up to head.
	k := copy(buf, r.buf[r.head:])
	copy(buf[k:], r.buf[:r.head])
	r.buf, r.head = buf, 0
}
