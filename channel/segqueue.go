package channel

import (
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/cpu"
)

// segQueue is the channel's queue: a multi-producer, single-consumer FIFO of
// segments of segSize slots. A Push is one fetch-and-add on the tail index
// (a CAS on a bounded channel, see reserveWithin), a store into the slot
// and an atomic OR into the segment's ready bitmap; it allocates only when
// it is the first to need a new segment and no recycled one is kept. The
// consumer (the Receiver, under its mutex) recycles the segments it has
// passed, so in steady state the queue does not allocate at all.
//
// Indices. Slot index i lives in the segment whose start is i rounded down
// to segSize. tail is the next index to hand out; head (consumer) the next
// one to pop. Segments are linked in index order through next.
//
// Invariants:
//
//  1. A producer owns slot i from the fetch-and-add (or CAS) that returns
//     i until its ready bit is set; nobody else writes vals[i], and the
//     consumer reads it only after seeing the bit (atomic, so the write of
//     the value happens before the read). A producer that gives up its
//     slot (abort) sets its skip bit before its ready bit, and the consumer
//     loads ready before skip, so it never reads an aborted slot as a
//     value. The consumer pops in index order and stops
//     at the first slot whose bit is clear, so each producer's values come
//     out in the order it pushed them, and a slot whose producer is slow
//     holds back the slots after it (the "Push in progress" case of the
//     queue's promise in channel.go).
//  2. tailSeg, the producers' starting point, moves forward one segment at
//     a time, by CAS, and only past a segment whose 64 ready bits are all
//     set. So when a producer reads tailSeg = S after reserving i, every
//     index below S.start has been written, i is not among them, and
//     i >= S.start: walking forward from S through next finds i's segment.
//  3. A segment is linked at most once: the producer that finds next nil
//     links a new one by CAS (start set before the CAS publishes it); a
//     loser hands its unpublished segment back to the spares.
//  4. Recycling. The producer whose CAS moves tailSeg off S records in
//     S.released the tail index T read after that CAS (plus one, so that 0
//     means "not yet"). A producer still walking from S read tailSeg
//     before the CAS, so it reserved its index i before T was read: i < T.
//     The consumer recycles S only once head >= T, that is once every
//     index below T, i among them, has been popped, which needs its
//     producer to have finished with the queue. So no producer holds a
//     pointer into a recycled segment (no ABA). The consumer keeps the
//     segments it has passed linked from oldest and recycles them in
//     order as their release and its head allow; a recycled segment is
//     cleared and kept on the free list for grow, or left to the GC when
//     the list holds maxFree already, which bounds what the queue keeps
//     after a burst.
//
// Layout: the groups of fields written by different goroutines are a cache
// line apart, so that a Push does not take the consumer's line away from it
// (and the other way round).
//
// Pacing. A consumer that keeps up with its producers reloads the ready
// word after almost every value, and each reload takes the line away from
// the producer's next OR: a line transfer per value, which costs more than
// the rest of a Send and a receive together (in a profile the producer's
// OR was 65% of publishing and the consumer's load 45% of Pop). So the
// consumer trails the producers a little, as FastForward's "temporal
// slipping" does (Giacomoni et al., PPoPP 2008). When a reload caught up
// with them (the run of ready slots it found ended inside the segment,
// after fewer than paceNear values), the Receiver calls pace before its
// next batch, and pace spins without touching a shared line, so that the
// next reload finds a run of values rather than one. The spin's length
// adapts to how fast the producers are, from paceSpin iterations (about
// 165 ns) to paceSpinMax (about 1.1 µs): it doubles when the reload after
// it found a short run of two or more values (fast producers, but the
// consumer still close behind), and halves when it found one value (slow
// producers, to whom a spin only adds delay) or a run of 2*paceNear. Its
// cost is bounded on both sides:
//
//   - It never holds back a value the consumer has found: the Receiver
//     paces only when it holds none (at the start of a Drain's batch, never
//     in TryRecv), pace does not spin when the last reload saw ready slots
//     beyond what the batch took, and the Receiver forgets near whenever it
//     stops (ErrEmpty, going idle, a Drain returning), so the first receive
//     after a Poll, or after a pause, never spins. A value sent during the
//     spin is found at its end, at most paceSpinMax late.
//   - A pace whose reload finds nothing was wasted: the producers had
//     stopped (request and response traffic, where the consumer catches up
//     every time). Each wasted pace doubles the number of later
//     opportunities skipped, up to 1<<paceBackoffMax, and a pace that finds
//     values ends the backoff. So a consumer that is not fed a stream spins
//     at most once per 64 opportunities, and one that is fed a stream
//     paces every time.
//   - With one processor (GOMAXPROCS 1 when the queue is made) the
//     producers cannot run during the spin: pace does nothing.
type segQueue[T any] struct {
	_    cpu.CacheLinePad
	tail atomic.Uint64 // every Push
	_    cpu.CacheLinePad

	tailSeg atomic.Pointer[segment[T]] // read by every Push, rarely written
	_       cpu.CacheLinePad

	// Recycled segments, taken by grow and given by recycle: each once per
	// segSize values, so a mutex costs little here.
	freeMu  sync.Mutex
	free    []*segment[T]
	maxFree int
	_       cpu.CacheLinePad

	// Consumer.
	head    uint64
	headSeg *segment[T]
	bits    uint64      // ready bits of headSeg last loaded; only ever grows
	skips   uint64      // skip bits loaded after bits
	oldest  *segment[T] // first passed segment not yet recycled; headSeg if none

	// Pacing, consumer only.
	paced   bool   // more than one processor when the queue was made
	near    bool   // the last reload caught up with the producers
	judging bool   // the next reload follows a spin: was it worth it?
	wasted  uint8  // consecutive paces whose reload found nothing
	skip    uint32 // opportunities to pass up before the next spin
	spin    int    // the next spin's length, in iterations; 0 until the first
	spun    uint64 // the spin's arithmetic lands here, so it is not elided
	paces   uint64 // spins so far (the tests read it)
	_       cpu.CacheLinePad
}

// Pacing's constants (see segQueue). paceSpin is a variable so that the
// benchmarks can turn pacing off (0) in the same run for comparison.
const (
	paceNear       = 16 // a shorter run, ending inside its segment, caught up
	paceBackoffMax = 6  // at most 1<<6 - 1 opportunities skipped between spins
)

// paceSpin is the shortest pace, in iterations of a dependent add: about
// 0.55 ns each on the machine of bench/RESULTS.md, so about 165 ns;
// paceSpinMax (about 1.1 µs there) the longest.
var paceSpin = 300

const paceSpinMax = 2000

// segSize is the number of slots in a segment: one ready bit each in a
// uint64, and the allocation bound of at most one per 64 messages.
const segSize = 64

const segFull = ^uint64(0)

type segment[T any] struct {
	_ cpu.CacheLinePad // segments are allocated side by side: keep this
	// header off the line holding the previous segment's last values.

	// Read-mostly: start and next are written once per life of the
	// segment, released once.
	start    uint64 // index of vals[0]; set before the segment is linked
	next     atomic.Pointer[segment[T]]
	released atomic.Uint64 // see invariant 4
	_        cpu.CacheLinePad
	// Written by every Push, read by the consumer once per batch.
	ready atomic.Uint64 // bit k: vals[k] is written (or skipped)
	skip  atomic.Uint64 // bit k: slot k was aborted and holds no value
	_     cpu.CacheLinePad
	vals  [segSize]T
}

// newSegQueue returns an empty queue that keeps up to maxFree recycled
// segments for reuse.
func newSegQueue[T any](maxFree int) *segQueue[T] {
	s := &segment[T]{}
	q := &segQueue[T]{headSeg: s, oldest: s, maxFree: maxFree, paced: runtime.GOMAXPROCS(0) > 1}
	q.tailSeg.Store(s)
	return q
}

// Push appends v: reserve and publish in one, for tests and benchmarks of
// the queue alone (a Send reserves and publishes in two steps, see
// core.take and core.put).
func (q *segQueue[T]) Push(v T) {
	seg, k := q.reserve()
	q.publish(seg, k, v)
}

// publish writes v into the reserved slot k of seg.
func (q *segQueue[T]) publish(seg *segment[T], k uint64, v T) {
	seg.vals[k] = v
	seg.ready.Or(1 << k)
}

// abort fills the reserved slot k of seg with nothing: Pop skips it. The
// skip bit is set before the ready bit, and Pop loads ready before skip, so
// a Pop that sees the slot ready sees it skipped too.
func (q *segQueue[T]) abort(seg *segment[T], k uint64) {
	seg.skip.Or(1 << k)
	seg.ready.Or(1 << k)
}

// reserve hands out the next slot: segment and index in it.
func (q *segQueue[T]) reserve() (*segment[T], uint64) {
	return q.locate(q.tail.Add(1) - 1)
}

// reserveWithin hands out the next slot if fewer than limit slots are
// handed out and not released (released counts the slots given back, by
// receives or aborts). used is that number, this slot included, or the
// number found when it reports false. It takes a bounded channel's
// capacity and its slot in one CAS.
//
// seen is the caller's copy of a value released had (a Sender's own,
// on its own cache line): released only grows, so tail minus seen
// overstates what is used, and while that is below limit there is room
// without reading released, the line every receive writes. Only when it
// is not is released read, and seen brought up to date.
func (q *segQueue[T]) reserveWithin(limit uint64, released, seen *atomic.Uint64) (seg *segment[T], k, used uint64, ok bool) {
	r := seen.Load()
	for {
		// r was read before t, and released never passes tail, so t-r
		// does not wrap.
		t := q.tail.Load()
		if t-r >= limit {
			// Maybe full. A "full" answer is given only if released did
			// not move while tail was read, when t-r was exact.
			nr := released.Load()
			t = q.tail.Load()
			if nr != r {
				seen.Store(nr)
				r = nr
			}
			if t-r >= limit {
				if released.Load() != r {
					continue
				}
				return nil, 0, t - r, false
			}
		}
		if q.tail.CompareAndSwap(t, t+1) {
			used = t - r + 1
			if used >= limit { // perhaps only because r is old: look
				// Others may have reserved and been received since, so
				// released may have passed t.
				if nr := released.Load(); nr <= t {
					used = t + 1 - nr
				} else {
					used = 1
				}
			}
			seg, k := q.locate(t)
			return seg, k, used, true
		}
	}
}

// locate finds the segment of index i, which the caller has reserved,
// linking new segments as needed (invariants 2 and 3).
func (q *segQueue[T]) locate(i uint64) (*segment[T], uint64) {
	seg := q.tailSeg.Load()
	for i-seg.start >= segSize {
		next := seg.next.Load()
		if next == nil {
			next = q.grow(seg)
		}
		if seg.ready.Load() == segFull && q.tailSeg.CompareAndSwap(seg, next) {
			seg.released.Store(q.tail.Load() + 1)
		}
		seg = next
	}
	return seg, i - seg.start
}

// grow links a segment after last, which had none, and returns last's
// successor (ours, or the one another producer linked first; ours goes
// back to the free list, never having been published).
func (q *segQueue[T]) grow(last *segment[T]) *segment[T] {
	n := q.takeFree()
	n.start = last.start + segSize
	if last.next.CompareAndSwap(nil, n) {
		return n
	}
	q.putFree(n)
	return last.next.Load()
}

func (q *segQueue[T]) takeFree() *segment[T] {
	q.freeMu.Lock()
	if k := len(q.free); k > 0 {
		s := q.free[k-1]
		q.free[k-1] = nil
		q.free = q.free[:k-1]
		q.freeMu.Unlock()
		return s
	}
	q.freeMu.Unlock()
	return &segment[T]{}
}

// putFree keeps a cleared, unlinked segment for grow, or drops it when
// maxFree are kept already.
func (q *segQueue[T]) putFree(s *segment[T]) {
	q.freeMu.Lock()
	if len(q.free) < q.maxFree {
		q.free = append(q.free, s)
	}
	q.freeMu.Unlock()
}

// Pop removes and returns the oldest value, or false if it has none to give
// now (see the queue's promise in channel.go). Consumer only.
func (q *segQueue[T]) Pop() (T, bool) {
	var zero T
	for {
		seg := q.headSeg
		k := q.head - seg.start
		if k == segSize {
			next := seg.next.Load()
			if next == nil {
				q.recycle()
				return zero, false
			}
			q.headSeg, seg, k = next, next, 0
			q.bits, q.skips = 0, 0
			q.recycle()
		}
		if q.bits&(1<<k) == 0 {
			// Load the bitmap only when the cached one is used up: it is
			// the line every Push writes.
			q.bits = seg.ready.Load()
			run := uint64(bits.TrailingZeros64(^(q.bits >> k)))
			q.judge(run)
			if run == 0 {
				q.recycle() // the queue is idle: give back what it can
				return zero, false
			}
			q.skips = seg.skip.Load()
		}
		q.head++
		if q.skips&(1<<k) != 0 {
			continue
		}
		v := seg.vals[k]
		seg.vals[k] = zero // let the GC have what the value points to
		return v, true
	}
}

// judge notes what a reload of the ready word found: a run of run ready
// slots from the head. Consumer only.
func (q *segQueue[T]) judge(run uint64) {
	k := q.head - q.headSeg.start
	q.near = run < paceNear && k+run < segSize
	if !q.judging {
		return
	}
	q.judging = false
	if run > 0 {
		q.wasted = 0
		switch {
		case run >= 2 && q.near:
			// The producers made several values during the spin, yet
			// it was too short to fall a run of paceNear behind them.
			q.spin = min(2*q.spin, paceSpinMax)
		case run == 1 || run >= 2*paceNear:
			// One value: the producers are slow next to the spin, which
			// buys nothing and delays. Many: it is longer than needed.
			q.spin = max(q.spin/2, paceSpin)
		}
		return
	}
	if q.wasted < paceBackoffMax {
		q.wasted++
	}
	q.skip = 1<<q.wasted - 1
}

// pace spins briefly if the last reload caught up with the producers and
// pacing is not backing off (see Pacing). The Receiver calls it only when
// it holds no value. Consumer only.
func (q *segQueue[T]) pace() {
	if !q.near || !q.paced || paceSpin == 0 {
		return
	}
	q.near = false
	if k := q.head - q.headSeg.start; k < segSize && q.bits&(1<<k) != 0 {
		// The last reload found more than the batch before took: the
		// next batch has values to start with, and waiting would only
		// hold them back. Not an opportunity for the backoff either.
		return
	}
	if q.skip > 0 {
		q.skip--
		return
	}
	if q.spin < paceSpin {
		q.spin = paceSpin
	}
	x := q.spun
	for i := range q.spin {
		x += uint64(i) ^ x
	}
	q.spun = x
	q.paces++
	q.judging = true
}

// unpace forgets that the consumer caught up, so that its next batch
// starts without spinning: the Receiver calls it when it goes idle and
// when a Drain returns. Consumer only.
func (q *segQueue[T]) unpace() { q.near = false }

// recycle clears and parks every passed segment that no producer can still
// be using (invariant 4). Consumer only.
func (q *segQueue[T]) recycle() {
	for q.oldest != q.headSeg {
		s := q.oldest
		r := s.released.Load()
		if r == 0 || q.head < r-1 {
			return
		}
		q.oldest = s.next.Load()
		s.next.Store(nil)
		s.ready.Store(0)
		s.skip.Store(0)
		s.released.Store(0)
		q.putFree(s)
	}
}

// Len implements Queue. Consumer only (it reads head); it counts slots
// reserved by Pushes still in progress.
func (q *segQueue[T]) Len() int { return int(q.tail.Load() - q.head) }
