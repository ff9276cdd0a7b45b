package channel

import (
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/cpu"

	"github.com/unipoll/unipoll/poll"
)

// The queue. Values travel through one queue, segQueue (segqueue.go),
// whose Pop promises one thing beyond "it returns what was pushed": once
// every Push has returned, Pop returns every value not yet popped. Pop may
// return false while a Push is still running, even for values whose own
// Push has returned (a slot reserved by a slower Send holds back the ones
// after it); the Send whose Push finishes last makes the Receiver readable
// again.
//
// Readiness accounting. The Receiver's Registration carries one bit that
// matters, R (Readable). "Available" below means: in the Receiver's stash
// (the one value it has popped ahead) or returned by the queue's next Pop.
// Every variable named here is a sync/atomic value or is guarded by the
// Receiver's mutex (the stash), and Go's atomics are sequentially
// consistent, so the two-sided checks below are Dekker's: of two goroutines
// that each write one variable and then read the other's, at least one
// sees the other's write.
//
//  S. A Send makes its value visible (Push returns, or the slot is
//     published), then reads R and, if it is clear, sets it. A Send never
//     clears R.
//  C. The Receiver clears R only when nothing is available: its stash is
//     empty and a Pop found nothing (TryRecv pops one value ahead, so this
//     is also the case just after it returned the last value; Drain does
//     so only where it stops, not between its batches). After
//     clearing R it pops once more (the re-check, into the stash) and sets
//     R again if that found a value or the channel is finished (rule D).
//  D. The last Sender to finish stores disconnected and then sets R (and
//     Hup). The channel is finished when it is disconnected and no value is
//     left or still coming (see Disconnection); from then on the Receiver
//     keeps R set and TryRecv returns ErrDisconnected.
//
// Claim: a value is never left available with R clear and nobody about to
// set it. Take the Receiver's clear X and its re-check K, and a value v
// that K did not find. By the queue's promise, some Push Q was still in
// progress when K looked (v's own, or a slower producer's ahead of it). Q's
// Send reads R after Q returns, so after K, so after X: it finds R clear
// and sets it, or finds it set by a SetReadiness made after X. Either way R
// was set after X, and in edge mode every SetReadiness is an edge (poll:
// "each call that sets a bit of the interest is a new edge"), so a later
// Poll call reports the Receiver. The consumer then receives until ErrEmpty;
// that either returns v or ends in a new clear and re-check, and the same
// argument applies to them. It ends because Pushes end: once none is in
// progress, Pop returns every value. This is what mio-extras' channel got
// wrong: it counted pending values, and a receive that ran between a
// sender's enqueue and its count update could make the counter and the
// queue disagree, leaving a value queued with no readiness set.
//
// Disconnection. A Sender finishes when it is closed and no Clone of it is
// in progress: a Clone holds one of its operation counts (Sender.state),
// Close marks it closed, and whoever brings a closed Sender to zero
// operations finishes it, exactly once, by CAS. The channel's sender count drops when a Sender
// finishes. ErrDisconnected must come only after the last value, also when
// a Send races the Close of its own Sender:
//
// A Send reserves its slot, then reads disconnected; if it is set, it
// fills the slot with a skip mark (abort) instead of its value, returns
// ErrClosed and then applies rule S. The Receiver declares the channel
// finished when it reads disconnected, then finds nothing to pop and no
// slot reserved beyond its head (the queue's tail). A Send that read
// disconnected clear reserved before that, so before the Receiver read the
// tail: its slot counts, and the Receiver waits for it (ErrEmpty, with R
// clear, which that Send's rule S sets again). This costs a Send no atomic
// read-modify-write beyond the queue's own two, and no operation count.
//
// Capacity (bounded channels). The capacity taken ("used") is the number
// of values reserved by Sends and not yet returned by the Receiver
// (queued, in flight, or popped ahead by TryRecv, but not handed back by
// a Drain, see below), or aborted: the queue's tail (slots handed out)
// minus released (slots given back). A Send takes its capacity and its
// slot in one CAS on the tail, made only while used < capacity
// (segQueue.reserveWithin). Receives and aborts give capacity back, once per value: a Drain's batch gives back
// the capacity of all its values at once, those it hands back when its
// loop stops early included, and the Receiver counts these
// (Receiver.given) so that taking them later gives nothing back a second
// time (that would let the channel overfill, and once more was given back
// than was ever taken, wrap the queue's used count and leave the
// channel full for good). A Send that finds no room and is about to
// block (a sleeper), and a Sender waiting for Writable (a wanter), are
// counted in waiting (under mu) and then look at the capacity again; a
// receive gives capacity back and then reads waiting, and if it is not
// zero takes mu to signal one sleeper and make every wanter Writable. The
// sleeper's second look happens with mu held until cond.Wait releases it,
// so the signal cannot fall between that look and the Wait. Blocked Sends
// sleep in cond.Wait: they never spin.
//
// A signalled sleeper stops counting as one at once (signalLocked), so
// while it wakes up the Receiver frees room without taking mu for each
// value, and the sleeper then finds room for many Sends, not one: a
// producer that outruns the consumer is woken once per burst, not once
// per value. A sleeper that reserves and sees room left passes the signal
// on to the next sleeper, so no sleeper is left asleep beside free room.
//
// Writable (every Sender has its own Registration, because Senders may be
// driven by different Polls). A Sender is Writable from its creation; it
// clears Writable when one of its own Sends fills the channel or finds it
// full, and is made Writable again when room appears (as a socket is
// writable until a write returns EAGAIN). An unbounded channel's Senders
// stay Writable. When the Receiver closes, every Sender is made
// Writable|Hup, so a producer driven by a Poll learns of it.

// core is what the Senders and the Receiver of one channel share.
type core[T any] struct {
	q     *segQueue[T]
	rxSet *poll.SetReadiness

	capacity int64 // 0: unbounded

	// Written once each; read by every Send and by TryRecv.
	rxClosed     atomic.Bool
	disconnected atomic.Bool

	_ cpu.CacheLinePad
	// Bounded: every receive. The capacity used is the queue's tail (slots
	// handed out) minus released.
	released atomic.Uint64
	_        cpu.CacheLinePad
	waiting  atomic.Int32 // sleepers + len(wanters); written under mu
	_        cpu.CacheLinePad

	senders  atomic.Int64 // Senders not yet finished
	mu       sync.Mutex
	cond     sync.Cond
	sleepers int                     // Sends in cond.Wait not yet signalled; guarded by mu
	wanters  []*Sender[T]            // waiting for Writable; guarded by mu
	all      map[*Sender[T]]struct{} // every unfinished Sender; guarded by mu
}

// unboundedFree is how many recycled segments (of segSize values) an
// unbounded channel keeps for reuse: a backlog up to about 1,000 values
// moves without allocating; the memory of a larger burst goes back to the
// GC once received.
const unboundedFree = 16

// New returns the two ends of an unbounded channel: Send never blocks and
// never fails for lack of room.
func New[T any]() (*Sender[T], *Receiver[T]) {
	return newChannel[T](0)
}

// NewBounded returns the two ends of a channel that holds at most capacity
// values: Send blocks and TrySend returns ErrFull while it is full. A
// capacity below 1 returns an error wrapping ErrInvalidArgument rather than
// panicking (as make(chan T, -1) would) or picking a size the caller did
// not ask for; there is no rendezvous channel of capacity 0.
func NewBounded[T any](capacity int) (*Sender[T], *Receiver[T], error) {
	if capacity < 1 {
		return nil, nil, fmt.Errorf("%w: channel capacity %d (at least 1)", ErrInvalidArgument, capacity)
	}
	s, r := newChannel[T](capacity)
	return s, r, nil
}

// newChannel makes a channel; capacity 0 is unbounded.
func newChannel[T any](capacity int) (*Sender[T], *Receiver[T]) {
	// Keep enough recycled segments for a bounded channel's whole
	// capacity, which fills and empties in bursts, and for unboundedFree
	// segments of an unbounded one.
	maxFree := unboundedFree
	if capacity > 0 {
		maxFree = capacity/segSize + 2
	}
	c := &core[T]{q: newSegQueue[T](maxFree), capacity: int64(capacity), all: map[*Sender[T]]struct{}{}}
	c.cond.L = &c.mu
	reg, set := poll.NewRegistration()
	c.rxSet = set
	r := &Receiver[T]{c: c, reg: reg}
	c.senders.Store(1)
	return c.newSender(), r
}

// slot is the room a Send has reserved: a slot of the queue.
type slot[T any] struct {
	seg *segment[T]
	k   uint64
}

// take reserves room for one value for s. It reports false if a bounded
// channel is full, and filled if this reservation filled it.
func (c *core[T]) take(s *Sender[T]) (sl slot[T], ok, filled bool) {
	if c.capacity == 0 {
		sl.seg, sl.k = c.q.reserve()
		return sl, true, false
	}
	var used uint64
	sl.seg, sl.k, used, ok = c.q.reserveWithin(uint64(c.capacity), &c.released, &s.relSeen)
	return sl, ok, ok && used == uint64(c.capacity)
}

// put fills the room sl with v and applies rule S. It aborts instead,
// gives the room back and returns ErrClosed if the channel is
// disconnected (see Disconnection).
func (c *core[T]) put(sl slot[T], v T) error {
	var err error
	if c.disconnected.Load() {
		c.q.abort(sl.seg, sl.k)
		err = ErrClosed
	} else {
		c.q.publish(sl.seg, sl.k, v)
	}
	if c.rxSet.Readiness()&poll.Readable == 0 {
		_ = c.rxSet.SetReadiness(poll.Readable)
	}
	if err != nil && c.capacity > 0 {
		c.release(1)
	}
	return err
}

// used is how much of a bounded channel's capacity is taken; while Sends
// and receives run it may be overstated.
func (c *core[T]) used() int64 {
	r := c.released.Load()
	return int64(c.q.tail.Load() - r)
}

// setR sets R unless it is set. Rule C's re-check and rule D use it.
func (c *core[T]) setR() {
	if c.rxSet.Readiness()&poll.Readable == 0 {
		_ = c.rxSet.SetReadiness(poll.Readable)
	}
}

// clearR clears R unless it is clear.
func (c *core[T]) clearR() {
	if c.rxSet.Readiness()&poll.Readable != 0 {
		_ = c.rxSet.UnsetReadiness(poll.Readable)
	}
}

// pop: Receiver's mutex held.
func (c *core[T]) pop() (T, bool) { return c.q.Pop() }

// release gives back the capacity of n values (returned by the Receiver,
// or aborted).
func (c *core[T]) release(n int) {
	c.released.Add(uint64(n))
	if c.waiting.Load() != 0 {
		c.mu.Lock()
		c.signalLocked()
		c.notifyWantersLocked(poll.Writable)
		c.mu.Unlock()
	}
}

// signalLocked wakes one sleeper, if any, and stops counting it.
func (c *core[T]) signalLocked() {
	if c.sleepers > 0 {
		c.sleepers--
		c.waiting.Add(-1)
		c.cond.Signal()
	}
}

// passLocked passes a signal on after a sleeper reserved: if room is left,
// the next sleeper may have some of it.
func (c *core[T]) passLocked() {
	if c.sleepers > 0 && c.used() < c.capacity {
		c.signalLocked()
	}
}

// broadcastLocked wakes every sleeper (to look at a close).
func (c *core[T]) broadcastLocked() {
	c.waiting.Add(-int32(c.sleepers))
	c.sleepers = 0
	c.cond.Broadcast()
}

// notifyWantersLocked makes every waiting Sender ready and forgets them.
func (c *core[T]) notifyWantersLocked(r poll.Ready) {
	for i, s := range c.wanters {
		_ = s.set.SetReadiness(r)
		s.wanting = false
		c.wanters[i] = nil
	}
	c.waiting.Add(-int32(len(c.wanters)))
	c.wanters = c.wanters[:0]
}

// wantLocked puts s on the list of Senders waiting for Writable.
func (c *core[T]) wantLocked(s *Sender[T]) {
	if !s.wanting {
		s.wanting = true
		c.wanters = append(c.wanters, s)
		c.waiting.Add(1)
	}
}

// unwantLocked takes s off that list (s finished).
func (c *core[T]) unwantLocked(s *Sender[T]) {
	if !s.wanting {
		return
	}
	s.wanting = false
	for i, w := range c.wanters {
		if w == s {
			last := len(c.wanters) - 1
			c.wanters[i] = c.wanters[last]
			c.wanters[last] = nil
			c.wanters = c.wanters[:last]
			c.waiting.Add(-1)
			return
		}
	}
}

// newSender makes a Sender handle; the caller has counted it in senders.
func (c *core[T]) newSender() *Sender[T] {
	reg, set := poll.NewRegistration()
	s := &Sender[T]{c: c, reg: reg, set: set}
	_ = set.SetReadiness(poll.Writable)
	c.mu.Lock()
	c.all[s] = struct{}{}
	if c.rxClosed.Load() {
		_ = set.SetReadiness(poll.Writable | poll.Hup)
	}
	c.mu.Unlock()
	if c.capacity > 0 && c.used() >= c.capacity {
		s.noRoom()
	}
	return s
}

// closeReceiver wakes every blocked Send (they return ErrDisconnected) and
// makes every Sender Writable|Hup. rxClosed is already set.
func (c *core[T]) closeReceiver() {
	c.mu.Lock()
	c.broadcastLocked()
	c.notifyWantersLocked(poll.Writable | poll.Hup)
	for s := range c.all {
		_ = s.set.SetReadiness(poll.Writable | poll.Hup)
	}
	c.mu.Unlock()
}
