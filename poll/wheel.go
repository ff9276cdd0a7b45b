package poll

import (
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// wheel is a hashed timing wheel: the one timer structure of unipoll. It
// holds the delayed readiness of Registrations and drives the Poll's
// timeout, so no goroutine or OS timer exists per delay.
//
// Time is counted in ticks since the wheel was made (monotonic clock). An
// entry due at tick d lives in slot d % len(slots) and fires when the
// consumer finds the current tick >= d. d is rounded up from the requested
// deadline, so an entry never fires early; the consumer sleeps exactly until
// the start of the earliest due tick, so it fires at most one tick late plus
// scheduling noise.
//
// Invariants (all under mu):
//   - An entry is in at most one slot list (slot >= 0) or in none (-1).
//   - occupied has bit s set iff slot s's list is non-empty; slotMin[s] is
//     at most the smallest due tick in slot s (it may be smaller after a
//     removal; that only costs one early look, never a late one).
//   - cur is the last tick the consumer has processed; every entry with
//     due <= cur has fired.
//   - sleepDue is the tick the consumer is sleeping until while sleeping is
//     set; an insertion due earlier wakes it, since it computed its timeout
//     without that entry.
//   - count is the number of entries; it is also read without mu (atomic)
//     so that a Poll with no delays pays nothing.
type wheel struct {
	mu       sync.Mutex
	tick     time.Duration
	origin   time.Time
	mask     int64
	slots    []*wheelEntry
	slotMin  []int64
	occupied []uint64
	cur      int64
	count    atomic.Int64
	sleeping bool
	sleepDue int64
	closed   bool
	wake     func()
	fired    []firedEntry // consumer scratch, reused
}

type wheelEntry struct {
	next, prev *wheelEntry
	due        int64
	slot       int64 // -1 when not scheduled
	owner      *regNode
}

type firedEntry struct {
	n *regNode
	r Ready
}

func (w *wheel) init(tick time.Duration, slots int, wake func()) {
	w.tick = tick
	w.origin = time.Now()
	w.mask = int64(slots - 1)
	w.slots = make([]*wheelEntry, slots)
	w.slotMin = make([]int64, slots)
	w.occupied = make([]uint64, (slots+63)/64)
	w.wake = wake
}

func (w *wheel) now() int64 { return int64(time.Since(w.origin) / w.tick) }

// delay schedules n's delayed readiness r after d, replacing any pending one.
func (w *wheel) delay(n *regNode, r Ready, d time.Duration) error {
	at := time.Since(w.origin) + d
	if at < 0 { // overflow: treat as "never" within int64 ticks
		at = math.MaxInt64
	}
	due := int64(at / w.tick)
	if at%w.tick != 0 {
		due++
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrClosed
	}
	e := &n.delay
	w.remove(e)
	if w.count.Load() == 0 {
		w.cur = w.now()
	}
	if due <= w.cur {
		due = w.cur + 1
	}
	n.delayed = r
	n.hasDelay.Store(true)
	w.insert(e, due)
	wake := w.sleeping && due < w.sleepDue
	if wake {
		w.sleeping = false
	}
	w.mu.Unlock()
	if wake {
		w.wake()
	}
	return nil
}

// cancel removes e if it is scheduled.
func (w *wheel) cancel(e *wheelEntry) {
	w.mu.Lock()
	w.remove(e)
	e.owner.delayed = 0
	e.owner.hasDelay.Store(false)
	w.mu.Unlock()
}

// unsetDelayed clears r from n's pending delayed readiness.
func (w *wheel) unsetDelayed(n *regNode, r Ready) {
	w.mu.Lock()
	n.delayed &^= r
	if n.delayed == 0 {
		w.remove(&n.delay)
		n.hasDelay.Store(false)
	}
	w.mu.Unlock()
}

func (w *wheel) insert(e *wheelEntry, due int64) {
	s := due & w.mask
	e.due, e.slot = due, s
	e.prev, e.next = nil, w.slots[s]
	if e.next != nil {
		e.next.prev = e
		w.slotMin[s] = min(w.slotMin[s], due)
	} else {
		w.slotMin[s] = due
		w.occupied[s>>6] |= 1 << (s & 63)
	}
	w.slots[s] = e
	w.count.Add(1)
}

func (w *wheel) remove(e *wheelEntry) {
	if e.owner == nil || e.slot < 0 || w.slots == nil {
		return
	}
	s := e.slot
	if e.prev != nil {
		e.prev.next = e.next
	} else if w.slots[s] == e {
		w.slots[s] = e.next
	} else {
		return // not linked
	}
	if e.next != nil {
		e.next.prev = e.prev
	}
	e.next, e.prev, e.slot = nil, nil, -1
	if w.slots[s] == nil {
		w.occupied[s>>6] &^= 1 << (s & 63)
	}
	w.count.Add(-1)
}

// expire fires every entry that is due. Consumer only.
func (w *wheel) expire() {
	if w.count.Load() == 0 {
		return
	}
	w.mu.Lock()
	target := w.now()
	if target <= w.cur || w.closed {
		w.mu.Unlock()
		return
	}
	steps := min(target-w.cur, w.mask+1)
	for t := target - steps + 1; t <= target; t++ {
		s := t & w.mask
		if w.occupied[s>>6]&(1<<(s&63)) == 0 || w.slotMin[s] > target {
			continue
		}
		newMin := int64(math.MaxInt64)
		for e := w.slots[s]; e != nil; {
			next := e.next
			if e.due <= target {
				w.remove(e)
				n := e.owner
				w.fired = append(w.fired, firedEntry{n, n.delayed})
				n.delayed = 0
				n.hasDelay.Store(false)
			} else {
				newMin = min(newMin, e.due)
			}
			e = next
		}
		w.slotMin[s] = newMin
	}
	w.cur = target
	w.mu.Unlock()
	// Fire outside the lock: set may link the node into the queue.
	for i, f := range w.fired {
		f.n.expired(f.r)
		w.fired[i] = firedEntry{}
	}
	w.fired = w.fired[:0]
}

// sleepTimeout shortens the consumer's timeout to the next due entry and
// records that the consumer sleeps until then. It returns the timeout and
// whether the wheel shortened it. Consumer only; pair with awake.
func (w *wheel) sleepTimeout(timeout time.Duration) (time.Duration, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	due := w.nextDue()
	w.sleeping, w.sleepDue = true, due
	if due == math.MaxInt64 {
		return timeout, false
	}
	until := w.untilTick(due)
	if timeout >= 0 && timeout <= until {
		return timeout, false
	}
	return until, true
}

// untilTick is the time from now to the start of tick due, never negative,
// and saturated at the largest Duration rather than wrapping: a delay of
// centuries on a coarse tick must not become a timeout of zero.
func (w *wheel) untilTick(due int64) time.Duration {
	if due > int64(math.MaxInt64/w.tick) {
		return math.MaxInt64
	}
	return max(time.Duration(due)*w.tick-time.Since(w.origin), 0)
}

// awake ends the sleep recorded by sleepTimeout.
func (w *wheel) awake() {
	w.mu.Lock()
	w.sleeping = false
	w.mu.Unlock()
}

// nextDue is the earliest due tick, or MaxInt64 if none. Scans forward from
// cur one rotation for an entry due in it, then falls back to the smallest
// slotMin. Called with mu held.
func (w *wheel) nextDue() int64 {
	if w.count.Load() == 0 {
		return math.MaxInt64
	}
	n := w.mask + 1
	best := int64(math.MaxInt64)
	for k := int64(1); k <= n; {
		s := (w.cur + k) & w.mask
		word := w.occupied[s>>6] >> (s & 63)
		if word == 0 {
			// Skip the rest of this word, or, for a wheel of fewer than 64
			// slots, the rest of the ring up to the wrap.
			k += min(n, 64) - (s & 63)
			continue
		}
		skip := int64(bits.TrailingZeros64(word))
		k += skip
		if k > n {
			break
		}
		s = (w.cur + k) & w.mask
		if m := w.slotMin[s]; m <= w.cur+k {
			return max(m, w.cur+1)
		} else if m < best {
			best = m
		}
		k++
	}
	return best
}

func (w *wheel) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	for s, e := range w.slots {
		for e != nil {
			next := e.next
			e.next, e.prev, e.slot = nil, nil, -1
			e.owner.delayed = 0
			e.owner.hasDelay.Store(false)
			e = next
		}
		w.slots[s] = nil
	}
	clear(w.occupied)
	w.count.Store(0)
}
