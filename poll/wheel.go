package poll

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/unipoll/unipoll/internal/slab"
)

// wheel is the hierarchical timing wheel: the one timer structure of
// unipoll, one per Poll. It holds the delayed readiness of Registrations
// (owner 0, delay.go) and the deadlines of TimerQueues (one owner each,
// timer_queue.go), and drives the Poll's timeout, so there is no goroutine
// and no OS timer per deadline.
//
// Time counts in ticks since the wheel was made (monotonic clock). An
// entry keeps its exact deadline (nanoseconds since the origin) and is due
// at tick ceil(deadline/tick): it fires when the consumer finds the
// current tick at least that, so never early; the consumer sleeps exactly
// until the start of the earliest due tick, so at most one tick late plus
// scheduling noise.
//
// Levels. Each level has `slots` slots (a power of two, at most 64) and an
// occupancy bitmap. A slot of level l spans slots^l ticks. An entry due at
// tick d sits in the level of the highest digit (base slots) in which d
// differs from cur, in the slot that digit names: so the entries of level 0
// are due within cur's current run of `slots` ticks, those of level 1
// within its run of slots^2, and so on. When the consumer reaches the start
// of an occupied slot of a level above 0 it takes the slot's entries and
// places them again relative to the new cur, one level down or more
// (cascading). An entry cascades at most once per level on its way down,
// and a tick touches only the slots that come due: the cost of time
// passing is what expires, not what is pending.
//
// Entries live in a slab (internal/slab); an entry is 32 bytes and there
// is no allocation per deadline in steady state. The slab gives its memory
// back after a burst. A slot holds its entries' indexes side by side in a
// vector (slotv), in no order, and each entry knows its place in it (pos),
// so that insert is an append and unlink a swap with the last. Slot
// vectors rather than linked lists because of what a million pending
// entries cost: taking a slot walks a vector, and the loads of its entries
// do not depend on one another, so the CPU overlaps their cache misses; a
// linked list's walk waits for each miss before it can start the next, and
// a list insert also writes the old head (one more miss).
//
// Invariants (all under mu):
//  1. An entry is in exactly one slot (where names it, and
//     slotv[where][pos] is its index) or free. When it fires it is freed
//     (a TimerQueue's key joins its expired ring), so a stale id names
//     nothing from then on.
//  2. Bit s of levels[l].occupied is set iff slot s of level l has an
//     entry (slotv[l*slots+s] is not empty).
//  3. Every entry in the slots is due after cur, and sits in the slot
//     that levelFor and slotFor give for its due tick relative to cur (cur
//     only moves to the start of the earliest occupied slot, or past every
//     slot start, so placements stay true).
//  4. count is the number of entries in slots whenever mu is free; it is
//     also read without mu (atomic), so that a Poll with nothing pending
//     pays nothing. expire adjusts it once per slot it takes, not once per
//     entry.
//  5. While sleeping is set, the consumer sleeps until tick sleepDue at the
//     latest; an insertion whose slot starts earlier wakes it, since it
//     computed its timeout without that entry.
//  6. An entry's id (index, generation) names it only while it is
//     allocated: gen comes from a counter that never repeats a value for a
//     slot in practice, so a stale id, once its entry is freed and reused,
//     never matches.
type wheel struct {
	mu       sync.Mutex
	tick     time.Duration
	perTick  divider // divides by tick (times are never negative)
	origin   time.Time
	bits     uint  // log2 of slots per level
	slots    int64 // slots per level
	levels   []wheelLevel
	slotv    [][]int32 // the entries of each slot l*slots+s, in no order (invariant 1)
	cur      int64     // the last tick the consumer has brought the wheel to (see invariant 3)
	count    atomic.Int64
	sleeping bool
	sleepDue int64
	closed   bool
	wake     func()

	entries slab.Slab[wheelEntry]
	nextGen uint32
	owners  []wheelOwner        // by owner id; 0 is the delays of Registrations
	nodes   slab.Slab[*regNode] // delay owner: the Registration of each key

	// Consumer scratch, reused.
	due       []dueEntry // entries that came due in one expire, sorted by deadline
	dueDelays []dueDelay // delays to fire once mu is released
	notified  []uint16   // owners whose readiness expire set

	// Totals for Stats.
	expired, cancelled uint64
	taken              uint64 // entries expire took from slots (tests)
	touched            int64  // see touch
}

type wheelLevel struct {
	occupied uint64
}

// wheelEntry is one deadline. 32 bytes (28 and padding).
type wheelEntry struct {
	deadline int64  // nanoseconds since origin
	key      uint64 // the owner's: a delay slot or a TimerQueue key
	pos      int32  // its index in slotv[where]
	gen      uint32 // see invariant 6
	where    uint16 // its slot: l*slots+s
	owner    uint16
}

// slotKeep is the largest capacity a slot vector keeps when it empties,
// so that a slot in steady use does not allocate, and the vectors of a
// burst go back to the garbage collector.
const slotKeep = 256

// slotFirst is the capacity a slot vector starts with: one allocation of
// 64 bytes where growing from nothing by appends would take four.
const slotFirst = 16

const (
	ownerDelays = 0
	maxOwners   = math.MaxUint16
	noEntry     = -1
)

// dueEntry is an entry that came due, with what sorting needs, so that the
// sort does not touch the entries themselves (they are scattered in
// memory).
type dueEntry struct {
	deadline int64
	gen      uint32
	idx      int32
}

// wheelID names one entry. The zero wheelID names none.
type wheelID struct{ idx, gen uint32 }

// dueDelay is a Registration whose delay came due, to be set outside mu.
type dueDelay struct {
	n *regNode
	r Ready
}

// maxWheelSlots is the most slots a level may have: its bitmap is one word.
const maxWheelSlots = 64

func (w *wheel) init(tick time.Duration, slots int, wake func()) {
	w.tick = tick
	w.perTick = newDivider(uint64(tick))
	w.origin = time.Now()
	w.bits = uint(bits.TrailingZeros(uint(slots)))
	w.slots = int64(slots)
	nlevels := (64 + int(w.bits) - 1) / int(w.bits)
	w.levels = make([]wheelLevel, nlevels)
	w.slotv = make([][]int32, nlevels*slots)
	w.owners = []wheelOwner{{refs: 1}} // the delay owner never goes away
	w.wake = wake
}

// now is the current tick: whole ticks since origin.
func (w *wheel) now() int64 { return int64(w.perTick.div(uint64(time.Since(w.origin)))) }

// deadlineAfter is the deadline d from now, in nanoseconds since origin,
// saturated rather than wrapped, and the current tick (from the same
// reading of the clock: one reading per deadline).
func (w *wheel) deadlineAfter(d time.Duration) (deadline, now int64) {
	at := time.Since(w.origin)
	now = int64(w.perTick.div(uint64(at)))
	if d > math.MaxInt64-at {
		return math.MaxInt64, now
	}
	return int64(at + d), now
}

// dueTick is the tick at which a deadline is due: ceil(deadline/tick).
func (w *wheel) dueTick(deadline int64) int64 {
	due := int64(w.perTick.div(uint64(deadline)))
	if due*int64(w.tick) != deadline {
		due++
	}
	return due
}

// dueOf is the tick at which entry e fires: its deadline rounded up to its
// owner's resolution, when that is coarser than a tick, and then to a
// tick. The entry keeps its exact deadline, which orders the entries that
// fire together.
func (w *wheel) dueOf(e *wheelEntry) int64 {
	deadline := e.deadline
	if res := int64(w.owners[e.owner].res); res > int64(w.tick) {
		if r := deadline % res; r != 0 {
			if deadline > math.MaxInt64-(res-r) {
				return w.dueTick(math.MaxInt64)
			}
			deadline += res - r
		}
	}
	return w.dueTick(deadline)
}

// levelFor is the level an entry due at tick due sits in, relative to cur.
func (w *wheel) levelFor(due int64) int {
	masked := uint64(w.cur^due) | uint64(w.slots-1)
	l := (63 - bits.LeadingZeros64(masked)) / int(w.bits)
	return min(l, len(w.levels)-1)
}

func (w *wheel) slotFor(due int64, level int) int64 {
	return due >> (uint(level) * w.bits) & (w.slots - 1)
}

// slotStart is the first tick of slot s of level l, in cur's current run of
// that level (or the next run, if that slot's turn has passed in this one).
func (w *wheel) slotStart(level int, s int64) int64 {
	shift := uint(level) * w.bits
	runBits := shift + w.bits // the level's whole run is 2^runBits ticks
	var start int64
	if runBits < 63 {
		start = w.cur&^(int64(1)<<runBits-1) + s<<shift
		if start <= w.cur {
			start += int64(1) << runBits
		}
	} else {
		start = s << shift // the top level spans all time
		if start <= w.cur {
			start = math.MaxInt64
		}
	}
	return start
}

// newEntry allocates an entry for owner, with key and deadline. mu held.
func (w *wheel) newEntry(owner uint16, key uint64, deadline int64) (int32, *wheelEntry) {
	idx, e := w.entries.Alloc()
	w.nextGen++
	if w.nextGen == 0 {
		w.nextGen = 1
	}
	*e = wheelEntry{deadline: deadline, key: key, pos: noEntry, gen: w.nextGen, owner: owner}
	w.owners[owner].refs++
	return int32(idx), e
}

// freeEntry returns an entry that is in no list. mu held.
func (w *wheel) freeEntry(idx int32) {
	e := w.entries.Get(uint32(idx))
	w.owners[e.owner].refs--
	w.entries.Free(uint32(idx))
}

// lookup returns the entry id names, if it is still allocated. mu held.
func (w *wheel) lookup(id wheelID) (int32, *wheelEntry, bool) {
	if id.gen == 0 || !w.entries.Valid(id.idx) {
		return noEntry, nil, false
	}
	e := w.entries.Get(id.idx)
	if e.gen != id.gen {
		return noEntry, nil, false
	}
	return int32(id.idx), e, true
}

// insert puts entry idx in its slot and returns the tick at which that
// slot starts: when the consumer must look at it. mu held; the caller
// counts the entry (invariant 4).
func (w *wheel) insert(idx int32, e *wheelEntry) int64 {
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

// unlink takes entry idx out of its slot: the slot's last entry takes its
// place in the vector. mu held.
func (w *wheel) unlink(idx int32, e *wheelEntry) {
	pos := int64(e.where)
	v := w.slotv[pos]
	last := int32(len(v) - 1)
	if debugChecks && (e.pos < 0 || e.pos > last || v[e.pos] != idx) {
		corruptedWheel("entry is not in the slot it names (invariant 1)")
	}
	if e.pos != last {
		moved := v[last]
		v[e.pos] = moved
		w.entries.Get(uint32(moved)).pos = e.pos
	}
	v = v[:last]
	if last == 0 {
		w.levels[pos/w.slots].occupied &^= 1 << (pos % w.slots)
		if cap(v) > slotKeep {
			v = nil
		}
	}
	if cap(v) > slotKeep && len(v) < cap(v)/4 {
		v = append([]int32(nil), v...) // give back what a burst of cancels left
	}
	w.slotv[pos] = v
	e.pos = noEntry
	w.count.Add(-1)
}

// schedule inserts a new entry and wakes a consumer sleeping past its
// slot's start (invariant 5). now is the current tick, read with the
// deadline. mu held; it returns whether to wake, which the caller does once
// mu is released.
func (w *wheel) schedule(owner uint16, key uint64, deadline, now int64) (wheelID, bool) {
	if w.count.Load() == 0 && w.cur < now {
		w.cur = now // nothing placed relative to the old cur: catch up for free
	}
	idx, e := w.newEntry(owner, key, deadline)
	start := w.insert(idx, e)
	w.count.Add(1)
	wake := w.sleeping && start < w.sleepDue
	if wake {
		w.sleeping = false
	}
	return wheelID{uint32(idx), e.gen}, wake
}

// next returns the level and slot of the earliest occupied slot and the
// tick it starts at; ok is false when the wheel is empty. Lower levels
// come due first (invariant 3), so the first level with a slot wins.
func (w *wheel) next() (level int, s, start int64, ok bool) {
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

// expire brings the wheel to the current tick: every entry that has come
// due fires (delays are set on their Registrations, deadlines of a
// TimerQueue join its expired list, in deadline order), and entries of
// slots above level 0 whose start has come move down. Consumer only.
func (w *wheel) expire() {
	if w.count.Load() == 0 {
		return
	}
	w.mu.Lock()
	now := w.now()
	if now <= w.cur || w.closed {
		w.mu.Unlock()
		return
	}
	for {
		l, s, start, ok := w.next()
		if !ok || start > now {
			break
		}
		pos := int64(l)*w.slots + s
		v := w.slotv[pos]
		w.slotv[pos] = nil
		w.levels[l].occupied &^= 1 << s
		w.cur = start
		// The entries of v go down to lower levels or fire, never back
		// into this slot (invariant 3), so v is not appended to while it
		// is walked.
		moved := 0
		for i, idx := range v {
			if i%touchBatch == 0 {
				w.touch(v[i:min(i+touchBatch, len(v))])
			}
			e := w.entries.Get(uint32(idx))
			if debugChecks && int64(e.where) != pos {
				corruptedWheel("entry in a slot other than the one it names (invariant 1)")
			}
			switch {
			case w.owners[e.owner].closed:
				w.freeEntry(idx)
			case w.dueOf(e) <= w.cur:
				w.due = append(w.due, dueEntry{e.deadline, e.gen, idx})
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
	w.cur = now
	w.fireDue()
	w.mu.Unlock()
	// Set delayed readiness outside mu: it may link the Registration into
	// the readiness queue (lock-free, but no reason to hold mu for it).
	for i, f := range w.dueDelays {
		_ = f.n.set(f.r)
		w.dueDelays[i] = dueDelay{}
	}
	w.dueDelays = w.dueDelays[:0]
}

// touchBatch is how many entries expire loads ahead of its work on them.
const touchBatch = 32

// touch loads the entries of idxs: a loop of independent loads and nothing
// else, so that the CPU has the cache misses of a whole batch in flight at
// once, where the work on each entry (placing it again, or firing it)
// would leave room for only two or three. Without it, a wheel of a million
// entries scattered over 32 MB spends most of its time waiting for one
// miss after another. mu held.
func (w *wheel) touch(idxs []int32) {
	var x int64
	for _, idx := range idxs {
		x ^= w.entries.Get(uint32(idx)).deadline
	}
	w.touched ^= x // keeps the loads
}

// fireDue hands the entries that came due to their owners, in deadline
// order. mu held.
func (w *wheel) fireDue() {
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
		idx := d.idx
		e := w.entries.Get(uint32(idx))
		if e.owner == ownerDelays {
			w.fireDelay(idx, e)
		} else {
			w.toExpired(idx, e)
		}
	}
	w.due = w.due[:0]
	for _, id := range w.notified {
		w.owners[id].notify()
	}
	w.notified = w.notified[:0]
}

// sleepTimeout shortens the consumer's timeout to the start of the next
// occupied slot and records that the consumer sleeps until then. It returns
// the timeout and whether the wheel shortened it. Consumer only; pair with
// awake.
func (w *wheel) sleepTimeout(timeout time.Duration) (time.Duration, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, _, start, ok := w.next()
	if !ok {
		start = math.MaxInt64
	}
	w.sleeping, w.sleepDue = true, start
	if !ok {
		return timeout, false
	}
	until := w.untilTick(start)
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

// close drops every entry and closes every owner (Poll.Close).
func (w *wheel) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	w.entries.Reset()
	w.nodes.Reset()
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

// divider divides by a fixed d with a multiplication, two shifts and an
// add (Granlund and Montgomery, "Division by invariant integers using
// multiplication", 1994): exact for every uint64. A 64-bit DIV takes tens
// of cycles, and every deadline the wheel places needs one or two (its
// due tick, the current tick).
type divider struct {
	m        uint64
	sh1, sh2 uint
}

// newDivider returns a divider by d, 1 <= d < 2^63 (a positive Duration).
func newDivider(d uint64) divider {
	l := uint(64 - bits.LeadingZeros64(d-1)) // ceil(log2 d), at most 63
	// m = floor(2^64 * (2^l - d) / d) + 1; 2^l - d < d, so Div64 does not
	// overflow.
	q, _ := bits.Div64((uint64(1)<<l)-d, 0, d)
	return divider{m: q + 1, sh1: min(l, 1), sh2: max(l, 1) - 1}
}

func (v divider) div(x uint64) uint64 {
	t, _ := bits.Mul64(v.m, x)
	return (t + (x-t)>>v.sh1) >> v.sh2
}
