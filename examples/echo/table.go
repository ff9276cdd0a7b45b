//go:build unix

package main

import "github.com/unipoll/unipoll/poll"

// connTable finds a connection from the token of its event. It is a slice,
// not a map: an event costs an index into memory that stays hot, where a
// map costs a hash and a bucket that, with thousands of connections, is
// often not in cache (a profile at 1,000 connections put the map lookup at
// 0.6% of the server's CPU, a tenth of all its user-space time). Slots
// are reused, so a token carries the slot's generation beside its index:
// an event still queued for a connection closed earlier in the same batch
// names a generation that no longer matches, and finds nothing, even if a
// new connection already took the slot.
//
// A token is gen<<32 | index with gen at least 1, so it never equals the
// server's fixed tokens (small numbers) nor poll.ReservedToken (gen stays
// below 2^31).
type connTable struct {
	slots []connSlot
	free  []uint32 // slots to reuse, most recently freed last
	live  int
}

type connSlot struct {
	c   *conn // nil while the slot is free
	gen uint32
}

const genLimit = 1 << 31

// add stores c and returns its token.
func (t *connTable) add(c *conn) poll.Token {
	var idx uint32
	if n := len(t.free); n > 0 {
		idx = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		idx = uint32(len(t.slots))
		t.slots = append(t.slots, connSlot{})
	}
	s := &t.slots[idx]
	s.gen++
	if s.gen >= genLimit {
		s.gen = 1
	}
	s.c = c
	t.live++
	return connToken(idx, s.gen)
}

func connToken(idx, gen uint32) poll.Token { return poll.Token(uint64(gen)<<32 | uint64(idx)) }

// get returns the connection tok names, or nil if it was removed.
func (t *connTable) get(tok poll.Token) *conn {
	idx, gen := uint32(tok), uint32(tok>>32)
	if uint64(idx) >= uint64(len(t.slots)) { // not int: idx may exceed a 32-bit int
		return nil
	}
	if s := &t.slots[idx]; s.gen == gen {
		return s.c
	}
	return nil
}

// remove forgets the connection tok names, if it is still there.
func (t *connTable) remove(tok poll.Token) {
	if t.get(tok) == nil {
		return
	}
	idx := uint32(tok)
	t.slots[idx].c = nil
	t.free = append(t.free, idx)
	t.live--
}

// len returns the number of connections stored.
func (t *connTable) len() int { return t.live }

// each calls f with every connection stored and its token; f may remove it.
func (t *connTable) each(f func(poll.Token, *conn)) {
	for i := range t.slots {
		if s := &t.slots[i]; s.c != nil {
			f(connToken(uint32(i), s.gen), s.c)
		}
	}
}
