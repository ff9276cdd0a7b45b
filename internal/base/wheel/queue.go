package wheel

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/unipoll/unipoll/internal/base/table"
)

// Queue is the wheel's side of one poll.TimerQueue: an owner of entries
// whose keys, when they come due, join an expired ring in deadline order,
// and whose readiness follows that ring (readable). It is bound to one
// Wheel by the first Bind, as its TimerQueue is to one Poll.
//
// The methods that take a callback run it under the wheel's mutex, so
// that a caller that keeps something per key (package timer keeps values)
// needs no lock of its own: whatever the callbacks of Add, Remove, TryRecv
// and Locked touch is guarded by that one lock, and a value changes
// together with its deadline. A callback must not call the Queue's methods
// (the lock is not reentrant), nor block: while it runs, every delay and
// timer of the Poll waits.
//
// Invariants:
//  1. w is set once, by Bind under mu, after id; a reader that loads a
//     non-nil w sees its id.
//  2. Before Bind, Locked holds mu, which Bind takes too; after it, the
//     wheel's mu. Both are held by Locked once bound, so what Locked
//     guards is never touched by a callback and a Locked at once.
//  3. Once closed is set (under the wheel's mu, by Close), the Queue no
//     longer uses id, which the next Queue may own: every method checks
//     closed under the wheel's mu before it touches the owner, and Stats
//     answers from final.
type Queue struct {
	res       time.Duration
	readable  func(bool)   // see owner.readable
	unbound   func() error // why a Queue without a wheel takes no deadline, in the words of its TimerQueue
	errClosed error        // the error of a closed Queue or Wheel
	ptrs      bool         // its entries carry a pointer beside their key (CarryPointers)

	mu sync.Mutex // serialises Bind and Close; Locked before Bind
	w  atomic.Pointer[Wheel]
	id uint16 // owner id in w, while not closed

	closed bool  // guarded by the wheel's mu (invariant 3)
	final  Stats // the owner's counters when it was closed
}

// Init sets up a Queue of resolution res (rounded up to whole ticks of the
// wheel it is bound to; 0 means the tick). readable sets or clears the
// readiness of the source the Queue serves, under the wheel's mutex;
// unbound returns the error of an operation before Bind; errClosed is the
// error once the Queue or its wheel is closed.
func (q *Queue) Init(res time.Duration, readable func(bool), unbound func() error, errClosed error) {
	q.res, q.readable, q.unbound, q.errClosed = max(res, 0), readable, unbound, errClosed
}

// CarryPointers makes the Queue's entries carry a pointer beside their
// key (ptrs.go), which AddKey takes and RemoveKey and TryRecvKey give
// back. Call it before Bind, with no other call on the Queue at once.
func (q *Queue) CarryPointers() { q.ptrs = true }

// Bind calls register, which registers the Queue's source and returns the
// wheel of the Poll it is bound to, and, if the Queue has no wheel yet,
// makes the Queue an owner of that wheel w. If that fails (w is closed: errClosed;
// w has no owner id left: ErrFull), it calls undo and returns the error.
// register and undo run under the Queue's mu, which serialises them with
// Close.
func (q *Queue) Bind(register func() (*Wheel, error), undo func()) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	w, err := register()
	if err != nil {
		return err
	}
	if q.w.Load() != nil {
		return nil
	}
	id, err := w.newOwner(q.res, q.ptrs, q.readable, q.errClosed)
	if err != nil {
		undo()
		return err
	}
	q.id = id
	q.w.Store(w) // invariant 1
	return nil
}

// bound returns the Queue's wheel and owner id, or the error that says
// why there is none.
func (q *Queue) bound() (*Wheel, uint16, error) {
	w := q.w.Load()
	if w == nil {
		return nil, 0, q.unbound()
	}
	return w, q.id, nil
}

// Add schedules a deadline d (not negative: the caller validates) from now
// carrying the key newKey makes under the wheel's mutex, and returns its
// ID. newKey runs at most once, and only once the Queue is known to take
// the deadline; if it returns an error, nothing is added and Add returns
// that error.
func (q *Queue) Add(d time.Duration, newKey func() (uint64, error)) (ID, error) {
	w := q.w.Load()
	if w == nil {
		return ID{}, q.unbound()
	}
	id := q.id
	deadline, at := w.DeadlineAfter(d)
	w.mu.Lock()
	if w.closed || q.closed {
		w.mu.Unlock()
		return ID{}, q.errClosed
	}
	key, err := newKey()
	if err != nil {
		w.mu.Unlock()
		return ID{}, err
	}
	eid, wake, err := w.schedule(id, key, deadline, at)
	w.mu.Unlock()
	if wake {
		w.wake()
	}
	return eid, err
}

// AddKey schedules a deadline d (not negative) from now carrying key, and
// p beside it if the Queue carries pointers (else p must be nil), as Add
// does with a newKey that returns key, but with no callback: the caller
// keeps nothing per key under the wheel's mutex (package timer's values
// that fit in the key and the pointer). With limit above zero, a Queue
// that holds limit keys already, pending or expired and not taken, takes
// no more: AddKey returns full.
//
// It is written out beside Add rather than sharing a body with it: one
// body with both paths' branches cost each Set+Cancel pair 1.7 ns, 3%
// (benchmarked on 2026-11-27). It also writes out w.schedule, as
// RemoveKey writes out w.cancel: the two calls and their results were 39
// of a pair's 569 instructions with a pointer beside the key, 24 of 516
// without (callgrind, bench/GAPS.md "Timers"). Keep each copy in step
// with its original; Check and the tests of both paths hold them to the
// same invariants.
func (q *Queue) AddKey(d time.Duration, key uint64, p unsafe.Pointer, limit int, full error) (ID, error) {
	w := q.w.Load()
	if w == nil {
		return ID{}, q.unbound()
	}
	id := q.id
	deadline, at := w.DeadlineAfter(d)
	w.mu.Lock()
	if w.closed || q.closed {
		w.mu.Unlock()
		return ID{}, q.errClosed
	}
	if o := &w.owners[id]; limit > 0 && o.refs+o.expired.Len() >= limit {
		w.mu.Unlock()
		return ID{}, full
	}
	// w.schedule(id, key, deadline, at), written out (see above).
	if w.count.Load() == 0 && len(w.staged) == 0 && at >= (w.cur+1)*int64(w.tick) {
		w.cur = int64(w.perTick.div(uint64(at)))
	}
	h, e, err := w.entries.Alloc()
	if err != nil {
		w.mu.Unlock()
		return ID{}, ErrTooMany
	}
	e.deadline, e.key, e.pos, e.where, e.owner = deadline, key, int32(len(w.staged)), stagedWhere, id
	o := &w.owners[id]
	o.refs++
	o.chunkBit(h.Idx)
	w.staged = append(w.staged, int32(h.Idx))
	if !w.stagedAny.Load() {
		w.stagedAny.Store(true)
	}
	if q.ptrs {
		w.ptrs.set(h.Idx, p)
	} else if debugChecks && p != nil {
		corrupted("a pointer given to a Queue that does not carry them (invariant 8)")
	}
	wake := w.sleeping && max(w.dueOf(e), w.cur+1) < w.sleepDue
	if wake {
		w.sleeping = false
	}
	w.mu.Unlock()
	if wake {
		w.wake()
	}
	return ID{h}, nil
}

// Remove cancels the deadline eid names, if it has not passed, and
// returns its key, which gone (if not nil) is given under the wheel's
// mutex. It returns false for a deadline that has passed (even one not yet
// taken), was removed already, or is another Queue's.
func (q *Queue) Remove(eid ID, gone func(key uint64)) (key uint64, ok bool) {
	w := q.w.Load()
	if w == nil {
		return 0, false
	}
	id := q.id
	w.mu.Lock()
	if q.closed {
		w.mu.Unlock()
		return 0, false
	}
	if key, ok = w.cancel(id, eid); ok && gone != nil {
		gone(key) // does not panic: it runs the caller's bookkeeping only
	}
	w.mu.Unlock()
	return key, ok
}

// RemoveKey is Remove with no callback, which also returns the pointer
// beside the key (nil unless the Queue carries pointers).
func (q *Queue) RemoveKey(eid ID) (key uint64, p unsafe.Pointer, ok bool) {
	w := q.w.Load()
	if w == nil {
		return 0, nil, false
	}
	id := q.id
	w.mu.Lock()
	if q.closed {
		w.mu.Unlock()
		return 0, nil, false
	}
	// w.cancel(id, eid), written out (see AddKey).
	e, ok := w.entries.Lookup(eid.h)
	if !ok || e.owner != id {
		w.mu.Unlock()
		return 0, nil, false // fired (and freed), cancelled, or another owner's
	}
	idx := int32(eid.h.Idx)
	if e.where == stagedWhere {
		w.staged = w.unlinkFrom(w.staged, idx, e)
	} else {
		w.unlink(idx, e)
	}
	o := &w.owners[id]
	o.refs--
	o.cancels++
	w.cancelled++
	key = e.key
	if o.ptrs {
		var last bool
		if p, last = w.ptrs.take(eid.h.Idx); last {
			w.ptrs.release(eid.h.Idx / table.ChunkSize)
		}
	}
	w.entries.FreeFound(eid.h)
	w.mu.Unlock()
	return key, p, true
}

// TryRecv takes the oldest expired key (the earliest deadline), which take
// (if not nil) is given under the wheel's mutex; false if none has
// expired. The Queue stops being readable when it takes the last one.
func (q *Queue) TryRecv(take func(key uint64)) (key uint64, ok bool) {
	w, id, err := q.bound()
	if err != nil {
		return 0, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if q.closed {
		return 0, false
	}
	if key, _, ok = w.takeExpired(id); ok && take != nil {
		take(key)
	}
	return key, ok
}

// TryRecvKey is TryRecv with no callback, which also returns the pointer
// beside the key (nil unless the Queue carries pointers).
func (q *Queue) TryRecvKey() (key uint64, p unsafe.Pointer, ok bool) {
	w, id, err := q.bound()
	if err != nil {
		return 0, nil, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if q.closed {
		return 0, nil, false
	}
	return w.takeExpired(id)
}

// Locked runs f while holding the lock the callbacks of Add, Remove and
// TryRecv run under (invariant 2), so that f may read and change what
// they guard. f must not call the Queue's methods, nor block.
func (q *Queue) Locked(f func()) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if w := q.w.Load(); w != nil {
		w.mu.Lock()
		defer w.mu.Unlock()
	}
	f()
}

// Stats returns the Queue's counters (zero before Bind).
func (q *Queue) Stats() Stats {
	w, id, err := q.bound()
	if err != nil {
		return Stats{}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if q.closed {
		return q.final
	}
	return w.stats(id)
}

// Close calls closeSource and, if it succeeds, drops the Queue's expired
// keys and its pending deadlines, which leave the wheel at once (counted
// as cancelled), and gives its owner id back for the next Queue. It
// returns closeSource's error.
func (q *Queue) Close(closeSource func() error) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := closeSource(); err != nil {
		return err
	}
	if w := q.w.Load(); w != nil {
		w.mu.Lock()
		if !q.closed {
			if !w.closed {
				w.closeOwner(q.id)
			}
			q.final = w.stats(q.id)
		}
		q.closed = true
		w.mu.Unlock()
	}
	return nil
}
