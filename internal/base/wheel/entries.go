package wheel

import (
	"errors"
	"unsafe"

	"github.com/unipoll/unipoll/internal/base/table"
)

// Entries: allocating, placing and taking out one deadline, and the
// methods through which the wheel's user (the Poll's delayed readiness)
// works on owner 0 under mu. Every function here runs with mu held.

// Lock takes the wheel's mutex, for a sequence of *Locked calls that must
// be atomic with the user's own state (the Poll keeps a Registration's
// pending delay beside its entry). It is a leaf lock (see the package
// header): take nothing else while holding it.
func (w *Wheel) Lock() { w.mu.Lock() }

// Unlock releases the mutex Lock took.
func (w *Wheel) Unlock() { w.mu.Unlock() }

// ClosedLocked reports whether Close has been called. mu held.
func (w *Wheel) ClosedLocked() bool { return w.closed }

// AddLocked schedules an entry of owner 0 carrying key, at deadline (from
// DeadlineAfter, with at). It returns its ID and whether to call Wake
// once mu is released (invariant 5), or ErrTooMany. The wheel must not be
// closed. mu held.
func (w *Wheel) AddLocked(key uint64, deadline, at int64) (ID, bool, error) {
	return w.schedule(ownerDirect, key, deadline, at)
}

// PendingLocked reports whether id names an entry of owner 0 that has not
// fired. mu held.
func (w *Wheel) PendingLocked(id ID) bool {
	_, e, ok := w.lookup(id)
	return ok && e.owner == ownerDirect
}

// CancelLocked takes the pending entry of owner 0 that id names out of the
// wheel and returns its key; false if it has fired or was cancelled. mu
// held.
func (w *Wheel) CancelLocked(id ID) (key uint64, ok bool) {
	return w.cancel(ownerDirect, id)
}

// Wake wakes a sleeping consumer, as AddLocked asked. Not under mu.
func (w *Wheel) Wake() { w.wake() }

// Pending is the number of entries in the wheel. Takes mu.
func (w *Wheel) Pending() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.count.Load() + int64(len(w.staged))
}

// Busy reports, without mu, whether the wheel may hold an entry: the
// consumer's test before it takes mu to Expire. It may say true of an
// empty wheel (a staged entry removed since), never false of one that
// holds an entry added before the call.
func (w *Wheel) Busy() bool { return w.count.Load() != 0 || w.stagedAny.Load() }

// Totals returns the number of entries that have fired and that were
// cancelled since Init, of every owner.
func (w *Wheel) Totals() (fired, cancelled uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.expired, w.cancelled
}

// ClockReads is the number of times the consumer has read the clock
// (Expire, SleepTimeout), for tests of how often a pass does.
func (w *Wheel) ClockReads() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reads
}

// ErrTooMany: the wheel holds as many entries as its table can name
// (2^31), which no program has the memory for.
var ErrTooMany = errors.New("unipoll: timing wheel full")

// get returns entry idx, which is in a slot (invariant 1), by index
// alone: a slot's vector holds indexes, checked against their generation
// when they were named by an ID.
func (w *Wheel) get(idx int32) *entry {
	if debugChecks {
		if _, _, ok := w.entries.Current(uint32(idx)); !ok {
			corrupted("a slot holds a free entry (invariant 1)")
		}
	}
	return w.entries.At(uint32(idx))
}

// freeEntry returns entry h, which is in no slot, to the table, and
// returns the pointer that was beside it (invariant 8).
func (w *Wheel) freeEntry(h table.Handle, e *entry) (p unsafe.Pointer) {
	o := &w.owners[e.owner]
	o.refs--
	if o.ptrs {
		p = w.ptrs.free(h.Idx)
	}
	w.entries.FreeFound(h)
	return p
}

// lookup returns the entry id names, if it is still allocated.
func (w *Wheel) lookup(id ID) (int32, *entry, bool) {
	e, ok := w.entries.Lookup(id.h)
	if !ok {
		return noEntry, nil, false
	}
	return int32(id.h.Idx), e, true
}

// insert puts entry idx in its slot and returns the tick at which that
// slot starts: when the consumer must look at it. The caller counts the
// entry (invariant 4).
func (w *Wheel) insert(idx int32, e *entry) int64 {
	due := max(w.dueOf(e), w.cur+1)
	l := w.levelFor(due)
	s := w.slotFor(due, l)
	pos := int64(l)*w.slots + s
	v := w.slotv[pos]
	if len(v) == 0 {
		w.levels[l].occupied |= 1 << s
		if v == nil {
			v = make([]int32, 0, slotFirst)
		}
	}
	e.where, e.pos = uint16(pos), int32(len(v))
	w.slotv[pos] = append(v, idx)
	if l == 0 {
		return due
	}
	return w.slotStart(l, s)
}

// unlink takes entry idx out of its slot or out of staged: the last
// entry of the vector takes its place.
func (w *Wheel) unlink(idx int32, e *entry) {
	if e.where == stagedWhere {
		w.staged = w.unlinkFrom(w.staged, idx, e)
		return
	}
	pos := int64(e.where)
	v := w.unlinkFrom(w.slotv[pos], idx, e)
	if len(v) == 0 {
		w.levels[pos/w.slots].occupied &^= 1 << (pos % w.slots)
		if cap(v) > slotKeep {
			v = nil
		}
	}
	if cap(v) > slotKeep && len(v) < cap(v)/4 {
		v = append([]int32(nil), v...) // give back what a burst of cancels left
	}
	w.slotv[pos] = v
	w.count.Add(-1)
}

// unlinkFrom takes entry idx out of v, the vector it is in, by moving
// v's last entry to its place, and returns v one shorter.
func (w *Wheel) unlinkFrom(v []int32, idx int32, e *entry) []int32 {
	last := int32(len(v) - 1)
	if debugChecks && (e.pos < 0 || e.pos > last || v[e.pos] != idx) {
		corrupted("entry is not in the slot it names (invariant 1)")
	}
	if e.pos != last {
		moved := v[last]
		v[e.pos] = moved
		w.get(moved).pos = e.pos
	}
	e.pos = noEntry
	return v[:last]
}

// schedule stages a new entry (invariant 7) and says whether to wake a
// consumer sleeping past its due tick (invariant 5). at is the reading of
// the clock the deadline was taken from. The caller wakes it once mu is
// released. Queue.AddKey has a copy of this body (it says why): change
// both.
func (w *Wheel) schedule(owner uint16, key uint64, deadline, at int64) (ID, bool, error) {
	if w.count.Load() == 0 && len(w.staged) == 0 && at >= (w.cur+1)*int64(w.tick) {
		// Nothing is placed relative to the old cur: catch up for free.
		w.cur = int64(w.perTick.div(uint64(at)))
	}
	h, e, err := w.entries.Alloc()
	if err != nil {
		return ID{}, false, ErrTooMany
	}
	// Field by field, every field: a composite literal is built on the
	// stack with stores of each field's width, then copied with 16-byte
	// loads that the CPU cannot forward from those stores (a stall of
	// about 10ns, 15% of a Set+Cancel).
	e.deadline, e.key, e.pos, e.where, e.owner = deadline, key, int32(len(w.staged)), stagedWhere, owner
	o := &w.owners[owner]
	o.refs++
	o.chunkBit(h.Idx)
	w.staged = append(w.staged, int32(h.Idx))
	if !w.stagedAny.Load() {
		w.stagedAny.Store(true)
	}
	wake := w.sleeping && max(w.dueOf(e), w.cur+1) < w.sleepDue
	if wake {
		w.sleeping = false
	}
	return ID{h}, wake, nil
}

// placeStaged puts every staged entry in its slot, but those due by tick
// now, which join due (Expire fires them): a consumer that reads the clock
// passes its tick, else cur (SleepTimeout places each due entry at cur+1,
// whose start has passed, so that the consumer does not sleep). mu held.
func (w *Wheel) placeStaged(now int64) {
	placed := 0
	for _, idx := range w.staged {
		e := w.get(idx)
		if now > w.cur && w.dueOf(e) <= now {
			h, _, _ := w.entries.Current(uint32(idx))
			e.pos = noEntry
			w.due = append(w.due, dueEntry{e.deadline, h.Gen, idx})
			continue
		}
		w.insert(idx, e)
		placed++
	}
	w.count.Add(int64(placed))
	if cap(w.staged) > slotKeep {
		w.staged = nil
	} else {
		w.staged = w.staged[:0]
	}
	w.stagedAny.Store(false)
}

// cancel takes owner's pending entry id out of the wheel and frees it,
// and returns its key; the pointer beside it, if any, is dropped (only
// RemoveKey, which has a copy of this body, hands it back: AddKey says
// why; change both).
func (w *Wheel) cancel(owner uint16, id ID) (key uint64, ok bool) {
	e, ok := w.entries.Lookup(id.h)
	if !ok || e.owner != owner {
		return 0, false // fired (and freed), cancelled, or another owner's
	}
	idx := int32(id.h.Idx)
	if e.where == stagedWhere {
		w.staged = w.unlinkFrom(w.staged, idx, e) // the common case, inlined
	} else {
		w.unlink(idx, e)
	}
	o := &w.owners[owner]
	o.refs--
	o.cancels++
	w.cancelled++
	key = e.key
	if o.ptrs {
		w.ptrs.free(id.h.Idx)
	}
	w.entries.FreeFound(id.h)
	return key, true
}
