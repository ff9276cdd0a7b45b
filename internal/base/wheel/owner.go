package wheel

import (
	"errors"
	"math"
	"time"
	"unsafe"

	"github.com/unipoll/unipoll/internal/base/ring"
	"github.com/unipoll/unipoll/internal/base/table"
)

// Owners. Every entry belongs to an owner: 0 is the wheel user's own
// (fire), every other id is one Queue's. Closing a Queue frees its
// entries at once (closeOwner), so its id is free for the next Queue as
// soon as Close returns, and no entry of a closed Queue is left to fire
// into its successor. To find them without a list per owner (which would
// cost memory per deadline, or work per Set), an owner keeps a filter of
// the table chunks its entries have been in (chunkBit): Close looks only
// at those chunks, one in filterChunks of the table when an owner's
// entries are few. Everything here runs with mu held unless it says
// otherwise.

// ErrFull: a wheel has MaxQueues Queues already.
var ErrFull = errors.New("wheel: no owner id left")

// MaxQueues is the most Queues one wheel holds at once: owner ids are
// 16-bit, and 0 is the wheel user's own.
const MaxQueues = maxOwners - 1

// owner is the wheel's record of one owner of entries.
type owner struct {
	readable func(bool)        // a Queue's: sets (true) or clears its readiness; under mu
	refs     int               // its entries in the wheel (pending)
	expired  ring.Ring[uint64] // keys of its entries that fired, in deadline order
	// ptrs says that the owner's entries carry a pointer beside their key
	// (ptrs.go); expiredPtrs then holds the pointers of the keys in
	// expired, one for one.
	ptrs        bool
	expiredPtrs ring.Ring[unsafe.Pointer]
	closed      bool          // Close ran: no entry is left, the id is free once refs is 0
	res         time.Duration // the Queue's resolution in whole ticks (ownerRes, dueOf)
	fired       uint64
	cancels     uint64
	// chunks has bit c%filterChunks set if an entry of the owner may be
	// in table chunk c (set on Add, cleared only when the owner is
	// closed): where closeOwner looks for its entries.
	chunks [filterChunks / 64]uint64
}

// filterChunks is the number of bits of an owner's chunk filter: a Close
// looks at 1/filterChunks of a big table per chunk its entries were in.
const filterChunks = 256

// chunkBit notes in owner o's filter that entry idx is its.
func (o *owner) chunkBit(idx uint32) {
	c := idx / table.ChunkSize % filterChunks
	o.chunks[c/64] |= 1 << (c % 64)
}

// Stats are one Queue's counters (poll.TimerStats says what each means).
type Stats struct {
	Pending, Expired int
	Fired, Cancelled uint64
}

// newOwner gives a Queue of resolution res, whose entries carry pointers
// if ptrs is set, an owner id, reusing one whose Queue is closed and whose
// entries are all gone. It returns errClosed once the wheel is closed,
// ErrFull when no id is left. Takes mu.
func (w *Wheel) newOwner(res time.Duration, ptrs bool, readable func(bool), errClosed error) (uint16, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, errClosed
	}
	o := owner{readable: readable, res: w.ownerRes(res), ptrs: ptrs}
	for id := 1; id < len(w.owners); id++ {
		if old := &w.owners[id]; old.closed && old.refs == 0 {
			*old = o
			return uint16(id), nil
		}
	}
	if len(w.owners) >= maxOwners {
		return 0, ErrFull
	}
	w.owners = append(w.owners, o)
	return uint16(len(w.owners) - 1), nil
}

// ownerRes is the resolution a Queue's deadlines are rounded to: res in
// whole ticks, rounded up, or 0 (the tick itself) for res at or below a
// tick. Whole ticks, because the wheel fires only at the start of a tick:
// a window that ended inside one would fire at the start of the next,
// almost one tick after the window's end, and windows of unequal lengths
// would make wake-ups uneven (3ms on a 2ms tick fired at 4, 6, 10, 12ms).
// It saturates at the largest whole number of ticks.
func (w *Wheel) ownerRes(res time.Duration) time.Duration {
	if res <= w.tick {
		return 0
	}
	n := res / w.tick
	if res%w.tick != 0 && n < math.MaxInt64/w.tick {
		n++
	}
	return n * w.tick
}

// closeOwner closes owner id: it drops its expired keys and frees its
// pending entries, which leave their slots (or staged) at once, and
// returns their number. The id is free for the next newOwner. mu held.
func (w *Wheel) closeOwner(id uint16) int {
	o := &w.owners[id]
	o.closeLocked()
	dropped := o.refs
	span := w.entries.Span() / table.ChunkSize
	for c := uint32(0); c < filterChunks && o.refs > 0; c++ {
		if o.chunks[c/64]&(1<<(c%64)) == 0 {
			continue
		}
		for ci := c; ci < span && o.refs > 0; ci += filterChunks {
			w.dropChunk(id, ci)
		}
	}
	if debugChecks && o.refs != 0 {
		corrupted("a closed owner has entries outside its chunk filter")
	}
	o.chunks = [filterChunks / 64]uint64{}
	o.cancels += uint64(dropped)
	w.cancelled += uint64(dropped)
	return dropped
}

func (o *owner) closeLocked() {
	o.closed = true
	o.expired.Reset()
	o.expiredPtrs.Reset()
}

// dropChunk frees the entries of owner id in table chunk ci. mu held.
func (w *Wheel) dropChunk(id uint16, ci uint32) {
	for idx := ci * table.ChunkSize; idx < (ci+1)*table.ChunkSize; idx++ {
		if h, e, ok := w.entries.Current(idx); ok && e.owner == id {
			w.unlink(int32(idx), e)
			w.freeEntry(h, e)
		}
	}
}

// toExpired frees an entry that came due and appends its key (and the
// pointer beside it) to its owner's expired ring (Expire hands them over
// in deadline order).
func (w *Wheel) toExpired(h table.Handle, e *entry) {
	o := &w.owners[e.owner]
	if o.expired.Len() == 0 {
		w.notified = append(w.notified, e.owner)
	}
	o.expired.Push(e.key)
	o.fired++
	if p := w.freeEntry(h, e); o.ptrs {
		o.expiredPtrs.Push(p)
	}
}

// takeExpired takes the oldest key of owner's expired ring, and the
// pointer beside it.
func (w *Wheel) takeExpired(id uint16) (key uint64, p unsafe.Pointer, ok bool) {
	o := &w.owners[id]
	if key, ok = o.expired.Pop(); !ok {
		return 0, nil, false
	}
	if o.ptrs {
		p, _ = o.expiredPtrs.Pop()
	}
	if o.expired.Len() == 0 {
		o.expired.Trim(expiredKeep)
		o.expiredPtrs.Trim(expiredKeep)
		// Under mu, so that an expiry cannot set the readiness between the
		// check and the clear (the expiring consumer holds mu too): an
		// expired deadline never waits with its queue unreadable.
		o.readable(false)
	}
	return key, p, true
}

// stats returns owner id's counters.
func (w *Wheel) stats(id uint16) Stats {
	o := &w.owners[id]
	return Stats{Pending: o.refs, Expired: o.expired.Len(), Fired: o.fired, Cancelled: o.cancels}
}

// expiredKeep is the largest buffer an owner's expired ring keeps while it
// is empty: a burst of expiries does not pin its memory, while a queue in
// steady use does not allocate.
const expiredKeep = 1024
