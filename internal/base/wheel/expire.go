package wheel

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/unipoll/unipoll/internal/base/table"
)

// The consumer's side: bringing the wheel to the present (Expire) and
// computing how long it may sleep (SleepTimeout, Awake). One goroutine at
// a time, the Poll's consumer (it holds the Poll's pollMu).

// next returns the level and slot of the earliest occupied slot and the
// tick it starts at; ok is false when the wheel is empty. Lower levels
// come due first (invariant 3), so the first level with a slot wins. mu
// held.
func (w *Wheel) next() (level int, s, start int64, ok bool) {
	for l := range w.levels {
		occ := w.levels[l].occupied
		if occ == 0 {
			continue
		}
		cur := w.cur >> (uint(l) * w.bits) & (w.slots - 1)
		if later := occ &^ (1<<cur - 1); later != 0 {
			s = int64(bits.TrailingZeros64(later))
		} else {
			s = int64(bits.TrailingZeros64(occ))
		}
		return l, s, w.slotStart(l, s), true
	}
	return 0, 0, 0, false
}

// Expire brings the wheel to the current tick: every entry that has come
// due fires (owner 0's keys go to fire, a Queue's join its expired ring,
// in deadline order), and entries of slots above level 0 whose start has
// come move down. Consumer only. An empty wheel costs two atomic loads,
// inlined into the caller. It reads the clock; ExpireWith shares one
// reading with the pass's SleepTimeout.
func (w *Wheel) Expire() {
	if w.Busy() {
		var r Reading
		w.ExpireWith(&r)
	}
}

// ExpireWith is Expire at the tick of r (read now, if r has no reading
// yet). The caller checks Busy first.
func (w *Wheel) ExpireWith(r *Reading) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	now := int64(w.perTick.div(uint64(w.read(r))))
	if w.stagedAny.Load() {
		w.placeStaged(now)
	}
	if now <= w.cur {
		return
	}
	for {
		l, s, start, ok := w.next()
		if !ok || start > now {
			break
		}
		w.takeSlot(l, s, start)
	}
	w.cur = now
	w.fireDue()
}

// takeSlot empties slot s of level l, which starts at tick start (the
// earliest occupied slot): cur moves to start, and each entry either
// comes due or goes down to a lower level. mu held.
func (w *Wheel) takeSlot(l int, s, start int64) {
	pos := int64(l)*w.slots + s
	v := w.slotv[pos]
	w.slotv[pos] = nil
	w.levels[l].occupied &^= 1 << s
	w.cur = start
	// The entries of v go down to lower levels or fire, never back into
	// this slot (invariant 3), so v is not appended to while it is walked.
	moved := 0
	for i, idx := range v {
		if i%touchBatch == 0 {
			w.touch(v[i:min(i+touchBatch, len(v))])
		}
		h, e, _ := w.entries.Current(uint32(idx))
		if debugChecks && (e == nil || int64(e.where) != pos) {
			corrupted("entry in a slot other than the one it names (invariant 1)")
		}
		if debugChecks && w.owners[e.owner].closed {
			corrupted("an entry of a closed owner is in a slot (closeOwner frees them)")
		}
		switch {
		case w.dueOf(e) <= w.cur:
			w.due = append(w.due, dueEntry{e.deadline, h.Gen, idx})
		default:
			w.insert(idx, e)
			moved++
		}
	}
	w.taken += uint64(len(v))
	w.count.Add(int64(moved - len(v)))
	if cap(v) <= slotKeep && w.slotv[pos] == nil {
		w.slotv[pos] = v[:0]
	}
}

// touchBatch is how many entries Expire loads ahead of its work on them.
const touchBatch = 32

// touch loads the entries of idxs: a loop of independent loads and nothing
// else, so that the CPU has the cache misses of a whole batch in flight at
// once, where the work on each entry (placing it again, or firing it)
// would leave room for only two or three. Without it, a wheel of a million
// entries scattered over 32 MB spends most of its time waiting for one
// miss after another. mu held.
func (w *Wheel) touch(idxs []int32) {
	var x int64
	for _, idx := range idxs {
		x ^= w.get(idx).deadline
	}
	w.touched ^= x // keeps the loads
}

// fireDue hands the entries that came due to their owners, in deadline
// order. mu held.
func (w *Wheel) fireDue() {
	if len(w.due) == 0 {
		return
	}
	slices.SortFunc(w.due, func(a, b dueEntry) int {
		if c := cmp.Compare(a.deadline, b.deadline); c != 0 {
			return c
		}
		return cmp.Compare(a.gen, b.gen) // scheduled first, first out
	})
	w.expired += uint64(len(w.due))
	for _, d := range w.due {
		h := table.Handle{Idx: uint32(d.idx), Gen: d.gen}
		e := w.get(d.idx)
		if e.owner == ownerDirect {
			key := e.key
			w.freeEntry(h, e)
			w.fire(key)
		} else {
			w.toExpired(h, e)
		}
	}
	w.due = w.due[:0]
	for _, id := range w.notified {
		w.owners[id].readable(true)
	}
	w.notified = w.notified[:0]
}

// SleepTimeout shortens the consumer's timeout to the start of the next
// occupied slot, counted from r (read now if r has no reading and the
// wheel holds an entry), and records that the consumer sleeps until then.
// It returns the timeout and whether the wheel shortened it. Consumer
// only; pair with Awake.
func (w *Wheel) SleepTimeout(timeout time.Duration, r *Reading) (time.Duration, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stagedAny.Load() {
		w.placeStaged(w.cur)
	}
	_, _, start, ok := w.next()
	if !ok {
		start = math.MaxInt64
	}
	w.sleeping, w.sleepDue = true, start
	if !ok {
		return timeout, false
	}
	until := w.untilTick(start, r)
	if timeout >= 0 && timeout <= until {
		return timeout, false
	}
	return until, true
}

// Awake ends the sleep recorded by SleepTimeout.
func (w *Wheel) Awake() {
	w.mu.Lock()
	w.sleeping = false
	w.mu.Unlock()
}

// Close drops every entry and closes every owner (Poll.Close). The
// wheel's user drops what it keeps for owner 0's keys itself.
func (w *Wheel) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	w.entries.Reset()
	w.ptrs = ptrSide{}
	w.staged = nil
	w.stagedAny.Store(false)
	for i := range w.slotv {
		w.slotv[i] = nil
	}
	for i := range w.levels {
		w.levels[i].occupied = 0
	}
	for i := range w.owners {
		w.owners[i].closeLocked()
	}
	w.count.Store(0)
}

// Advance moves the wheel's clock forward by d at once, for tests that
// must make deadlines pass in one step whatever the machine's load: the
// origin moves back by d. Nothing outside tests calls it.
func (w *Wheel) Advance(d time.Duration) {
	w.mu.Lock()
	w.origin = w.origin.Add(-d)
	w.mu.Unlock()
}
