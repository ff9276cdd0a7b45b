// Package tokens hands out poll Tokens for values and finds a value from
// the Token of its event: the table that a program on a raw Poll keeps to
// go from an event to its connection (mio users reach for the slab crate
// for the same job).
//
// A Table is a slice, not a map: an event costs an index into memory that
// stays hot, where a map costs a hash and a bucket that, with thousands of
// connections, is often not in cache. Slots are reused, so a Token
// carries its slot's generation beside its index: an event still queued
// for a connection removed earlier in the same batch names a generation
// that no longer matches and finds nothing, even if a new connection has
// taken the slot.
//
// The index of a Table:
//   - Insert gives a value a Token; Remove takes it back.
//   - Get finds the value of a Token, Len counts them, All walks them.
//
// Which Tokens a Table hands out: every one is at least MinToken (its
// generation, never 0, sits in bits 32-62), so the Tokens below MinToken
// are free for a program's fixed sources (a listener, a stop channel);
// bit 63 is clear, so a Table's Tokens may be registered on an eventloop
// Loop's Poll (eventloop.IsLoopToken is false for them); and none is
// poll.ReservedToken.
package tokens

import (
	"errors"
	"fmt"
	"iter"

	"github.com/unipoll/unipoll/internal/base/table"
	"github.com/unipoll/unipoll/poll"
)

// MinToken is the smallest Token a Table hands out.
const MinToken = poll.Token(1 << 32)

// ErrFull is returned by Insert when the Table holds 2^31 values.
var ErrFull = errors.New("tokens: table full")

// Table maps Tokens to values of type V. The zero Table is empty and ready
// to use. A Table is not safe for concurrent use: it belongs to the
// goroutine that calls Poll, like the Events it reads.
//
// Memory: the Table grows in chunks of a thousand values and gives a
// chunk back once a burst has left it empty, so a server that once held a
// hundred thousand connections does not keep their slots.
type Table[V any] struct {
	t    table.Table[V]
	init bool
}

// Insert stores v and returns its Token.
func (t *Table[V]) Insert(v V) (poll.Token, error) {
	if !t.init {
		t.t.Shrink, t.init = true, true
	}
	h, p, err := t.t.Alloc()
	if err != nil {
		return 0, fmt.Errorf("%w (%d values)", ErrFull, t.t.Len())
	}
	*p = v
	return poll.Token(h.Pack()), nil
}

// Get returns the value tok names, or false if tok was removed or never
// handed out by this Table.
func (t *Table[V]) Get(tok poll.Token) (V, bool) {
	if p, ok := t.t.Lookup(table.Unpack(uint64(tok))); ok {
		return *p, true
	}
	var zero V
	return zero, false
}

// Remove forgets the value tok names and returns it, or false if tok names
// nothing (removed already, or a stale Token of a reused slot: that slot's
// new value stays).
func (t *Table[V]) Remove(tok poll.Token) (V, bool) {
	var zero V
	h := table.Unpack(uint64(tok))
	p, ok := t.t.Lookup(h)
	if !ok {
		return zero, false
	}
	v := *p
	*p = zero // the Table does not keep a removed value alive
	t.t.Free(h)
	return v, true
}

// Len returns the number of values stored.
func (t *Table[V]) Len() int { return t.t.Len() }

// All yields every value stored with its Token, lowest slot first. The
// loop's body may Remove the value it is given.
func (t *Table[V]) All() iter.Seq2[poll.Token, V] {
	return func(yield func(poll.Token, V) bool) {
		for h, p := range t.t.All() {
			if !yield(poll.Token(h.Pack()), *p) {
				return
			}
		}
	}
}
