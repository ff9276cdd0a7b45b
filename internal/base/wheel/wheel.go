// Package wheel is the hierarchical timing wheel: the one timer structure
// of unipoll, one per Poll. It holds the delayed readiness of
// Registrations (owner 0, whose entries the Poll fires itself) and the
// deadlines of TimerQueues (one owner each, a Queue), and drives the
// Poll's timeout, so there is no goroutine and no OS timer per deadline.
// It sits below package poll and does not import it; poll/wheel.go is the
// Poll's side of it, and package timer reaches a TimerQueue's Queue
// through QueueOf (link.go).
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
// Entries live in an index-and-generation table (internal/base/table,
// with Shrink); an entry is 32 bytes with its generation, and there is no
// allocation per deadline in steady state. The table gives its memory back
// after a burst. A slot holds its entries' indexes side by side in a
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
//     slotv[where][pos] is its index), or staged (invariant 7), or free. When it fires it is freed
//     (a Queue's key joins its expired ring; owner 0's key goes to the
//     fire callback), so a stale ID names nothing from then on.
//  2. Bit s of levels[l].occupied is set iff slot s of level l has an
//     entry (slotv[l*slots+s] is not empty).
//  3. Every entry in the slots is due after cur, and sits in the slot
//     that levelFor and slotFor give for its due tick relative to cur (cur
//     only moves to the start of the earliest occupied slot, or past every
//     slot start, so placements stay true).
//  4. count is the number of entries in slots (not staged) whenever mu is
//     free; it is also read without mu (atomic), with stagedAny, so that
//     a Poll with nothing pending pays nothing. Expire adjusts it once per slot it takes, not once per
//     entry.
//  5. While sleeping is set, the consumer sleeps until tick sleepDue at the
//     latest; an insertion whose slot starts earlier wakes it, since it
//     computed its timeout without that entry.
//  6. An entry's ID (its table Handle: index and generation) names it
//     only while it is allocated: the table's generations come from one
//     counter of 2^31 - 1 values, so a stale ID, once its entry is freed
//     and reused, never matches in practice. They also order allocations,
//     which orders the entries that fire in the same nanosecond.
//  7. A new entry is staged: its index goes in staged (where is
//     stagedWhere, pos its place there) and no level knows it, until the
//     consumer's next look (Expire, SleepTimeout) places it, or fires it
//     if it is due by then. stagedAny is set while staged is not empty
//     (it may stay set after a Remove emptied it, until that look). So a
//     deadline set and removed between two looks, the common case of a
//     timeout whose reply came, costs an append and a swap, and a
//     consumer that looks once per tick places each deadline once. While
//     the consumer sleeps, an entry due before sleepDue wakes it
//     (invariant 5), which is all the levels would have done.
//  8. An entry whose owner carries pointers may have one beside it, in
//     ptrs at its index, where the garbage collector sees it (a key
//     would hide it); no other index has one (ptrs.go).
//
// Lock order: a Queue's mu, then the Poll's locks (a Registration's mu),
// then the wheel's mu, a leaf: nothing called under it takes another lock
// but the lock-free readiness of a Registration (the readable and fire
// callbacks).
package wheel

import (
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/unipoll/unipoll/internal/base/table"
)

// Wheel is one Poll's timing wheel. The zero Wheel is not usable: call
// Init once before anything else.
type Wheel struct {
	mu      sync.Mutex
	tick    time.Duration
	perTick divider // divides by tick (times are never negative)
	origin  time.Time
	bits    uint  // log2 of slots per level
	slots   int64 // slots per level
	levels  []level
	slotv   [][]int32 // the entries of each slot l*slots+s, in no order (invariant 1)
	cur     int64     // the last tick the consumer has brought the wheel to (see invariant 3)
	count   atomic.Int64
	// staged holds the entries added since the consumer last looked, in
	// no order (invariant 7); stagedAny says, without mu, that it may not
	// be empty.
	staged    []int32
	stagedAny atomic.Bool
	sleeping  bool
	sleepDue  int64
	closed    bool
	wake      func()
	fire      func(key uint64) // owner 0's due entries, under mu

	entries table.Table[entry]
	ptrs    ptrSide // pointers beside the entries of owners that carry them (invariant 8)
	owners  []owner // by owner id; 0 is the wheel user's own (fire)

	// Consumer scratch, reused.
	due      []dueEntry // entries that came due in one Expire, sorted by deadline
	notified []uint16   // owners whose readiness Expire set

	// Totals for Totals.
	expired, cancelled uint64
	reads              uint64 // clock readings of the consumer (ClockReads)
	taken              uint64 // entries Expire took from slots (tests)
	touched            int64  // see touch
}

type level struct {
	occupied uint64
}

// entry is one deadline: 24 bytes, 32 in its table slot with the
// generation (invariant 6).
type entry struct {
	deadline int64  // nanoseconds since origin
	key      uint64 // the owner's: a Registration's delay slot or a Queue key
	pos      int32  // its index in slotv[where]
	where    uint16 // its slot: l*slots+s, or stagedWhere
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
	stagedWhere = math.MaxUint16 // entry.where of a staged entry (invariant 7)
	ownerDirect = 0              // the wheel user's own entries, handed to fire
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

// ID names one entry. The zero ID names none.
type ID struct{ h table.Handle }

// MaxSlots is the most slots a level may have: its bitmap is one word.
const MaxSlots = 64

// Init makes w a wheel of the given tick and slots per level (a power of
// two from 2 to MaxSlots; the caller validates). wake interrupts a
// consumer sleeping in the timeout SleepTimeout gave (invariant 5); fire
// receives, under mu and in deadline order, the key of each entry of owner
// 0 (AddLocked) that comes due. Neither may take a lock or call w.
func (w *Wheel) Init(tick time.Duration, slots int, wake func(), fire func(key uint64)) {
	w.tick = tick
	w.perTick = newDivider(uint64(tick))
	w.origin = time.Now()
	w.bits = uint(bits.TrailingZeros(uint(slots)))
	w.slots = int64(slots)
	nlevels := (64 + int(w.bits) - 1) / int(w.bits)
	w.levels = make([]level, nlevels)
	w.slotv = make([][]int32, nlevels*slots)
	w.entries.Shrink = true
	w.owners = []owner{{refs: 1}} // owner 0 never goes away
	w.wake, w.fire = wake, fire
}

// Reading is one reading of the wheel's clock, taken when a call first
// needs it and shared by the calls of one pass of the consumer (Expire,
// SleepTimeout), so that a pass reads the clock once. A reading only ever
// lags the clock, so a call that uses one is never early; it is late by
// no more than the time since the reading, which the consumer keeps short
// (a new Reading after it slept). The zero Reading has none yet.
type Reading struct {
	at int64 // nanoseconds since origin
	ok bool
}

// read returns r's reading, taking it now if r has none. mu held.
func (w *Wheel) read(r *Reading) int64 {
	if !r.ok {
		r.at, r.ok = int64(time.Since(w.origin)), true
		w.reads++
	}
	return r.at
}

// DeadlineAfter is the deadline d from now, in nanoseconds since origin,
// saturated rather than wrapped, and the reading of the clock it was taken
// from (at, nanoseconds since origin: one reading per deadline). It needs
// no lock: read the clock before taking mu, and hand both to AddLocked.
func (w *Wheel) DeadlineAfter(d time.Duration) (deadline, at int64) {
	now := time.Since(w.origin)
	if d > math.MaxInt64-now {
		return math.MaxInt64, int64(now)
	}
	return int64(now + d), int64(now)
}

// dueTick is the tick at which a deadline is due: ceil(deadline/tick).
func (w *Wheel) dueTick(deadline int64) int64 {
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
func (w *Wheel) dueOf(e *entry) int64 {
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
func (w *Wheel) levelFor(due int64) int {
	masked := uint64(w.cur^due) | uint64(w.slots-1)
	l := (63 - bits.LeadingZeros64(masked)) / int(w.bits)
	return min(l, len(w.levels)-1)
}

func (w *Wheel) slotFor(due int64, level int) int64 {
	return due >> (uint(level) * w.bits) & (w.slots - 1)
}

// slotStart is the first tick of slot s of level l, in cur's current run of
// that level (or the next run, if that slot's turn has passed in this one).
func (w *Wheel) slotStart(level int, s int64) int64 {
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

// untilTick is the time from the reading r to the start of tick due, never negative,
// and saturated at the largest Duration rather than wrapping: a delay of
// centuries on a coarse tick must not become a timeout of zero.
func (w *Wheel) untilTick(due int64, r *Reading) time.Duration {
	if due > int64(math.MaxInt64/w.tick) {
		return math.MaxInt64
	}
	return max(time.Duration(due)*w.tick-time.Duration(w.read(r)), 0)
}
