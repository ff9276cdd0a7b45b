package wheel

import (
	"fmt"

	"github.com/unipoll/unipoll/internal/base/table"
)

// Check walks every slot and checks invariants 1 to 4, 7 and 8 against it: each
// entry is where it says, in the slot its due tick gives, the occupancy
// bits match the slots, and count and the table agree with what the slots
// hold. It returns the first broken one, or nil. It takes mu; call it with
// no Expire in progress. For tests (this package's and the Poll's): the
// cost is one pass over every slot and entry.
func (w *Wheel) Check() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for l := range w.levels {
		for s := int64(0); s < w.slots; s++ {
			pos := int64(l)*w.slots + s
			occupied := w.levels[l].occupied&(1<<s) != 0
			v := w.slotv[pos]
			if (len(v) != 0) != occupied {
				return fmt.Errorf("level %d slot %d: occupancy bit %v, %d entries (invariant 2)", l, s, occupied, len(v))
			}
			for i, idx := range v {
				if err := w.checkEntry(l, s, i, idx); err != nil {
					return err
				}
				n++
			}
		}
	}
	if c := w.count.Load(); c != int64(n) {
		return fmt.Errorf("count %d, %d entries in slots (invariant 4)", c, n)
	}
	for i, idx := range w.staged {
		_, e, ok := w.entries.Current(uint32(idx))
		if !ok || e.where != stagedWhere || e.pos != int32(i) {
			return fmt.Errorf("staged entry %d at place %d is free or names another place (invariant 7)", idx, i)
		}
	}
	if len(w.staged) != 0 && !w.stagedAny.Load() {
		return fmt.Errorf("%d entries staged, stagedAny clear (invariant 7)", len(w.staged))
	}
	if a := w.entries.Len(); a != n+len(w.staged) {
		return fmt.Errorf("%d entries allocated, %d in slots and %d staged (invariant 1)", a, n, len(w.staged))
	}
	return w.checkPtrs()
}

// checkPtrs checks invariant 8: every entry of an owner that carries
// pointers has a place beside it, no other index holds a pointer, the
// chunks count their places, and none but chunk 0 is kept empty. mu held.
func (w *Wheel) checkPtrs() error {
	want := 0
	for idx := range w.entries.Span() {
		if _, e, ok := w.entries.Current(idx); ok && w.owners[e.owner].ptrs {
			want++
			ci := idx / table.ChunkSize
			if int(ci) >= len(w.ptrs.chunks) || w.ptrs.chunks[ci] == nil {
				return fmt.Errorf("entry %d of owner %d, which carries pointers, has no place (invariant 8)", idx, e.owner)
			}
		}
	}
	for ci, c := range w.ptrs.chunks {
		if c == nil {
			continue
		}
		if c.n == 0 && ci > 0 {
			return fmt.Errorf("chunk %d of pointers kept with no place given (invariant 8)", ci)
		}
		for i, p := range c.p {
			idx := uint32(ci*table.ChunkSize + i)
			if _, e, ok := w.entries.Current(idx); p != nil && (!ok || !w.owners[e.owner].ptrs) {
				return fmt.Errorf("a pointer beside entry %d, free or of an owner without pointers (invariant 8)", idx)
			}
		}
	}
	if got, _ := w.ptrs.count(); got != want {
		return fmt.Errorf("%d places of pointers counted, %d entries carry one (invariant 8)", got, want)
	}
	return nil
}

// checkEntry checks entry idx, at place i of slot s of level l. mu held.
func (w *Wheel) checkEntry(l int, s int64, i int, idx int32) error {
	pos := int64(l)*w.slots + s
	_, e, ok := w.entries.Current(uint32(idx))
	if !ok {
		return fmt.Errorf("slot %d holds free entry %d (invariant 1)", pos, idx)
	}
	if e.pos != int32(i) || int64(e.where) != pos {
		return fmt.Errorf("entry %d at slot %d place %d names slot %d place %d (invariant 1)", idx, pos, i, e.where, e.pos)
	}
	due := max(w.dueOf(e), w.cur+1)
	if gl, gs := w.levelFor(due), w.slotFor(due, l); gl != l || gs != s {
		return fmt.Errorf("entry %d (due %d, cur %d) in level %d slot %d, belongs in level %d (invariant 3)", idx, due, w.cur, l, s, gl)
	}
	return nil
}
