package poll

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// TimerQueue is a set of deadlines on a Poll's own timing wheel, each
// carrying a key of the caller's: the building block of the timer package
// (which maps keys to values of any type), and of any source that needs
// deadlines without a goroutine or an OS timer per deadline. Deadlines
// that pass join the queue's expired list, in deadline order, and a
// TimerQueue is an Evented that is Readable while that list is not empty.
//
// A TimerQueue is bound to the first Poll it is registered with, like a
// Registration, and Add needs it registered (ErrNotRegistered before).
// Add, Remove, Next and Len may be called from any goroutine. The zero
// TimerQueue is not usable: make one with NewTimerQueue.
type TimerQueue struct {
	reg *Registration
	set *SetReadiness
	res time.Duration

	mu sync.Mutex    // serialises binding to the wheel and Close
	id atomic.Uint32 // owner id in the bound Poll's wheel; 0 until bound
}

// TimerID names one deadline of a TimerQueue, for Remove. It stays safe to
// use after its deadline has expired or been removed, and after its slot in
// the wheel has been reused: it then names nothing. The zero TimerID names
// nothing.
type TimerID struct{ id wheelID }

// TimerStats are a TimerQueue's counters.
type TimerStats struct {
	// Pending is the number of deadlines not yet passed.
	Pending int
	// Expired is the number of deadlines passed and not yet taken by Next.
	Expired int
	// Fired is the number of deadlines that have passed since the queue
	// was made.
	Fired uint64
	// Cancelled is the number of deadlines removed before they passed.
	Cancelled uint64
}

// wheelOwner is the wheel's record of one owner of entries: the delays of
// Registrations (owner 0), or one TimerQueue. Guarded by the wheel's mu.
type wheelOwner struct {
	q       *TimerQueue
	refs    int           // its entries in the wheel (pending)
	expired keyRing       // keys of its entries that fired, in deadline order
	closed  bool          // entries are freed as they come up
	res     time.Duration // the queue's resolution in whole ticks (wheel.ownerRes, wheel.dueOf)
	fired   uint64
	cancels uint64
}

// NewTimerQueue returns a TimerQueue whose deadlines are rounded up to a
// multiple of resolution, counted from the creation of the Poll it is
// bound to, so that deadlines close together pass in one tick and wake
// the Poll once. A resolution at or below the Poll's WheelTick means the
// tick; one that is not a multiple of it is rounded up to one, since the
// wheel fires only at the start of a tick. A deadline therefore passes
// never early and less than one resolution (or one tick) late.
func NewTimerQueue(resolution time.Duration) *TimerQueue {
	reg, set := NewRegistration()
	return &TimerQueue{reg: reg, set: set, res: max(resolution, 0)}
}

var errZeroTimerQueue = wrapf(ErrInvalidArgument, "nil or zero TimerQueue (make one with poll.NewTimerQueue)")

func (q *TimerQueue) check() error {
	if q == nil || q.reg == nil {
		return errZeroTimerQueue
	}
	return nil
}

// Register implements Evented. The first Register binds the queue to p.
func (q *TimerQueue) Register(p *Poll, t Token, interest Ready, opts PollOpt) error {
	if err := q.check(); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.reg.Register(p, t, interest, opts); err != nil {
		return err
	}
	if q.id.Load() != 0 {
		return nil
	}
	id, err := p.wheel.newOwner(q)
	if err != nil {
		_ = q.reg.Deregister(p)
		return err
	}
	q.id.Store(uint32(id))
	return nil
}

// Reregister implements Evented.
func (q *TimerQueue) Reregister(p *Poll, t Token, interest Ready, opts PollOpt) error {
	if err := q.check(); err != nil {
		return err
	}
	return q.reg.Reregister(p, t, interest, opts)
}

// Deregister implements Evented. Deadlines keep passing while the queue is
// deregistered; registering it again reports the ones that did.
func (q *TimerQueue) Deregister(p *Poll) error {
	if err := q.check(); err != nil {
		return err
	}
	return q.reg.Deregister(p)
}

// bound returns the queue's wheel and owner id, or an error saying why
// there is none.
func (q *TimerQueue) bound() (*wheel, uint16, error) {
	if err := q.check(); err != nil {
		return nil, 0, err
	}
	id := q.id.Load()
	p := q.reg.n.poll.Load()
	if id == 0 || p == nil {
		if q.reg.n.state.Load()&stDropped != 0 {
			return nil, 0, ErrClosed
		}
		return nil, 0, wrapf(ErrNotRegistered, "TimerQueue.Add before the queue was registered with a Poll")
	}
	return &p.wheel, uint16(id), nil
}

// Add schedules a deadline d from now carrying key, and returns its id.
// It returns ErrInvalidArgument for a negative d, ErrNotRegistered before
// the queue is first registered, and ErrClosed once the queue or its Poll
// is closed.
func (q *TimerQueue) Add(d time.Duration, key uint64) (TimerID, error) {
	return q.AddFunc(d, func() (uint64, error) { return key, nil })
}

// AddFunc is Add with the key made by newKey while the queue's lock is
// held (the lock of its Poll's timing wheel), so that a caller that keeps
// something per key (the timer package keeps values) needs no lock of its
// own on that path: whatever newKey, and the callbacks of RemoveFunc,
// NextFunc and Locked, touch is guarded by that one lock. newKey runs at
// most once, and only once the queue is known to take the deadline; if it
// returns an error, no deadline is added and AddFunc returns that error.
// newKey must not call the queue's methods (the lock is not reentrant),
// nor block: while it runs, every delay and timer of the Poll waits.
func (q *TimerQueue) AddFunc(d time.Duration, newKey func() (uint64, error)) (TimerID, error) {
	if d < 0 {
		return TimerID{}, wrapf(ErrInvalidArgument, "negative duration %v", d)
	}
	w, id, err := q.bound()
	if err != nil {
		return TimerID{}, err
	}
	deadline, now := w.deadlineAfter(d)
	w.mu.Lock()
	if w.closed || w.owners[id].closed {
		w.mu.Unlock()
		return TimerID{}, ErrClosed
	}
	key, err := newKey()
	if err != nil {
		w.mu.Unlock()
		return TimerID{}, err
	}
	eid, wake := w.schedule(id, key, deadline, now)
	w.mu.Unlock()
	if wake {
		w.wake()
	}
	return TimerID{eid}, nil
}

// Remove cancels the deadline t names, if it has not passed, and returns
// its key. It returns false for a deadline that has passed (even one not
// yet taken by Next), was removed already, or is another queue's.
func (q *TimerQueue) Remove(t TimerID) (key uint64, ok bool) {
	w, id, err := q.bound()
	if err != nil {
		return 0, false
	}
	return w.remove(id, t.id, nil)
}

// RemoveFunc is Remove that hands the key to gone while the queue's lock is
// held (see AddFunc), and reports whether it did.
func (q *TimerQueue) RemoveFunc(t TimerID, gone func(key uint64)) bool {
	w, id, err := q.bound()
	if err != nil {
		return false
	}
	_, ok := w.remove(id, t.id, gone)
	return ok
}

// Next takes the oldest expired deadline (the one with the earliest
// deadline) and returns its key, or false if none has expired. The queue
// stops being Readable when Next has taken the last one.
func (q *TimerQueue) Next() (key uint64, ok bool) {
	w, id, err := q.bound()
	if err != nil {
		return 0, false
	}
	return w.takeExpired(id, nil)
}

// NextFunc is Next that hands the key to take while the queue's lock is
// held (see AddFunc), and reports whether it did.
func (q *TimerQueue) NextFunc(take func(key uint64)) bool {
	w, id, err := q.bound()
	if err != nil {
		return false
	}
	_, ok := w.takeExpired(id, take)
	return ok
}

// Locked runs f while holding the lock that AddFunc, RemoveFunc and
// NextFunc run their callbacks under (before the queue is first
// registered, a lock of the queue's own that binding it takes too), so
// that f may read and change what those callbacks guard. f must not call
// the queue's methods, nor block (see AddFunc).
func (q *TimerQueue) Locked(f func()) {
	if q.check() != nil {
		f()
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if id := q.id.Load(); id != 0 {
		if p := q.reg.n.poll.Load(); p != nil {
			p.wheel.mu.Lock()
			defer p.wheel.mu.Unlock()
		}
	}
	f()
}

// remove cancels owner's pending entry eid; gone, if not nil, is given
// its key under mu.
func (w *wheel) remove(owner uint16, eid wheelID, gone func(uint64)) (key uint64, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	idx, e, ok := w.lookup(eid)
	if !ok || e.owner != owner {
		return 0, false // fired (and freed), removed, or another owner's
	}
	key = e.key
	w.unlink(idx, e)
	w.freeEntry(idx)
	w.cancelled++
	w.owners[owner].cancels++
	if gone != nil {
		gone(key)
	}
	return key, true
}

// takeExpired takes the oldest key of owner's expired ring; take, if not
// nil, is given it under mu.
func (w *wheel) takeExpired(owner uint16, take func(uint64)) (key uint64, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	o := &w.owners[owner]
	if key, ok = o.expired.pop(); !ok {
		return 0, false
	}
	if o.expired.len() == 0 {
		o.expired.trim()
		// Under mu, so that an expiry cannot set the readiness between the
		// check and the clear (the expiring consumer holds mu too): an
		// expired deadline never waits with its queue unreadable.
		_ = o.q.set.n.unset(Readable)
	}
	if take != nil {
		take(key)
	}
	return key, true
}

// Stats returns the queue's counters (zero before it is registered).
func (q *TimerQueue) Stats() TimerStats {
	w, id, err := q.bound()
	if err != nil {
		return TimerStats{}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	o := &w.owners[id]
	return TimerStats{Pending: o.refs, Expired: o.expired.len(), Fired: o.fired, Cancelled: o.cancels}
}

// Len returns the number of deadlines pending or expired and not yet taken.
func (q *TimerQueue) Len() int {
	s := q.Stats()
	return s.Pending + s.Expired
}

// Close drops every deadline and closes the queue: once it returns, no
// Poll call started afterwards reports it, and Add returns ErrClosed.
// Closing twice returns ErrClosed.
func (q *TimerQueue) Close() error {
	if err := q.check(); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.reg.Close(); err != nil {
		return err
	}
	if id := q.id.Load(); id != 0 {
		if p := q.reg.n.poll.Load(); p != nil {
			p.wheel.closeOwner(uint16(id))
		}
	}
	return nil
}

// newOwner gives q an owner id, reusing one whose queue is closed and
// whose entries are all gone.
func (w *wheel) newOwner(q *TimerQueue) (uint16, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, ErrClosed
	}
	for id := 1; id < len(w.owners); id++ {
		if o := &w.owners[id]; o.closed && o.refs == 0 {
			*o = wheelOwner{q: q, res: w.ownerRes(q.res)}
			return uint16(id), nil
		}
	}
	if len(w.owners) >= maxOwners {
		return 0, wrapf(ErrInvalidArgument, "more than %d TimerQueues on one Poll", maxOwners-1)
	}
	w.owners = append(w.owners, wheelOwner{q: q, res: w.ownerRes(q.res)})
	return uint16(len(w.owners) - 1), nil
}

// ownerRes is the resolution a queue's deadlines are rounded to: res in
// whole ticks, rounded up, or 0 (the tick itself) for res at or below a
// tick. Whole ticks, because the wheel fires only at the start of a tick:
// a window that ended inside one would fire at the start of the next,
// almost one tick after the window's end, and windows of unequal lengths
// would make wake-ups uneven (3ms on a 2ms tick fired at 4, 6, 10, 12ms).
// It saturates at the largest whole number of ticks.
func (w *wheel) ownerRes(res time.Duration) time.Duration {
	if res <= w.tick {
		return 0
	}
	n := res / w.tick
	if res%w.tick != 0 && n < math.MaxInt64/w.tick {
		n++
	}
	return n * w.tick
}

// closeOwner drops the owner's expired keys; its pending entries are
// freed as they come up in the wheel (expire), and the id is reused once
// none is left.
func (w *wheel) closeOwner(id uint16) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.owners[id].closeLocked()
}

func (o *wheelOwner) closeLocked() {
	o.closed = true
	o.expired = keyRing{}
}

// toExpired frees an entry that came due and appends its key to its
// owner's expired ring (expire hands them over in deadline order). mu
// held.
func (w *wheel) toExpired(idx int32, e *wheelEntry) {
	o := &w.owners[e.owner]
	if o.expired.len() == 0 {
		w.notified = append(w.notified, e.owner)
	}
	o.expired.push(e.key)
	o.fired++
	w.freeEntry(idx)
}

// notify makes the owner's queue readable. mu held (see takeExpired).
func (o *wheelOwner) notify() { _ = o.q.set.n.set(Readable) }

// keyRing is a FIFO of keys, grown by doubling, that gives its memory back
// once it is empty and large (trim).
type keyRing struct {
	buf  []uint64
	head int
	n    int
}

func (r *keyRing) len() int { return r.n }

func (r *keyRing) push(k uint64) {
	if r.n == len(r.buf) {
		buf := make([]uint64, max(16, 2*len(r.buf)))
		for i := range r.n {
			buf[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
		}
		r.buf, r.head = buf, 0
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = k
	r.n++
}

func (r *keyRing) pop() (uint64, bool) {
	if r.n == 0 {
		return 0, false
	}
	k := r.buf[r.head]
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	return k, true
}

// keyRingKeep is the largest ring kept while it is empty.
const keyRingKeep = 1024

func (r *keyRing) trim() {
	if r.n == 0 && len(r.buf) > keyRingKeep {
		*r = keyRing{}
	}
}
