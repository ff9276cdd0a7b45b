package poll

import (
	"sync/atomic"

	"golang.org/x/sys/cpu"
)

// The readiness queue carries Registrations that may have become ready from
// producer goroutines (SetReadiness, from anywhere) to the one consumer (the
// goroutine inside Poll, serialised by pollMu). The consumer moves every
// node it unlinks into its held list (held.go) and keeps it there, still
// queued, for as long as it is in use.
//
// Node state. Each Registration has one regNode whose shared state is one
// atomic word (its bits are tabled in state.go): readiness, interest,
// mode, and the flags queued, owed, registered and dropped. Every change is
// a CAS loop on that word, so each transition sees and produces a consistent
// whole. "Linked" below means: in the readiness queue or in the held list.
//
// Invariants:
//
//  1. queued is set exactly while the node is linked, and a node is linked
//     at most once. It is linked into the queue only by the goroutine whose
//     CAS set queued (a producer, or Register/Reregister); the consumer
//     moves it from the queue to the held list, and only the consumer clears
//     queued, for a node it then drops from the held list. Hence no double
//     insertion and no double unlink (mio's list corruption). (Poll.Close
//     forgets the held list with queued still set: producers do nothing
//     after Close, so nobody links those nodes again.)
//  2. owed is set by every SetReadiness that sets a bit of the interest
//     (an edge), and by a Register or Reregister that finds the node ready
//     for its new interest (rule 5; one that does not, clears it). The
//     consumer clears it in the CAS that reports the node and in the one
//     that unlinks it. UnsetReadiness leaves it, which is harmless: a node
//     is reported only while something is pending, and pending comes back
//     only through SetReadiness (a new edge) or Register/Reregister (which
//     recompute owed). A producer that sets owed either finds queued
//     already set (the node is linked, the consumer looks at it again and
//     its CAS reads the word after ours) or sets queued itself and links
//     the node. No readiness is lost between a report and the next edge.
//  3. The consumer decides with one CAS over the whole word: the event it
//     reports (readiness&interest), the clear of owed, the disarm of
//     oneshot (interest cleared, and the node unlinked) happen together; the
//     unlink of a node expects a word with nothing to report. A concurrent
//     SetReadiness either is included or makes the CAS fail and is seen
//     when the consumer reads the word again.
//  4. No blocking without a look: a pass that may block first releases
//     every held node that has nothing to report (releaseHeld), and does
//     not block if one has something. Between blocks the held list is a
//     FIFO (a node looked at goes to its back; idle nodes take no room in
//     ev), so an owed held node is reported within a bounded number of
//     calls. Hence a producer that fires a held node needs no waker write:
//     the consumer is not blocked, and looks before it blocks. A level node
//     is reported whenever it is ready, an edge node whenever it is owed one.
//     A node reported in the current pass waits for the next (its epoch);
//     a pass that reports anything ends the Poll call, so this keeps "at
//     most one event per token per Poll call".
//  5. dropped (Registration.Close) and !registered (Deregister) nodes that
//     are still linked are unlinked and forgotten by the consumer; the GC
//     reclaims them once unreachable, so there is no reference count to get
//     wrong and no use after free.
//  6. The token of an event and the interest that filtered it come from one
//     snapshot of the state word: Reregister publishes a new token slot and
//     the new interest in one CAS, and the consumer's delivering CAS pins
//     the slot it reads (see stTokWriteShift in state.go). An event
//     never pairs a new token with an old interest, nor carries a token that
//     was never registered for the node.
//
// The queue. An intrusive multi-producer single-consumer queue after Dmitry
// Vyukov: producers exchange head and then link the previous head to their
// node; the consumer walks from tail. A stub node marks the empty queue. A
// producer descheduled between its exchange and its link leaves the queue
// "inconsistent": the consumer cannot see the node yet, must not sleep, and
// retries.
//
// A half-done link hides more than its own node: the last node before it
// cannot be unlinked either (its successor is not known), and a node whose
// SetReadiness returned before the Poll call began may sit behind it. So
// the consumer marks the head as it starts a drain (mark): every push that
// returned before then is at or before that goal. Until the goal is passed
// (unlinked) the consumer waits for a half-done link to finish (the
// producer is between two atomic stores, so it only needs to run), also
// when the link is the goal's own successor's; after it, a half-done link
// belongs to a push that overlaps the drain, and the consumer may leave
// it for the next pass.
//
// Sleep. The consumer announces that it is about to block with the sleep
// word (awake -> asleep), then checks the queue once more; a producer links
// its node first and then looks at the sleep word. Both steps are
// sequentially consistent atomics, so either the consumer sees the node and
// does not block, or the producer sees "asleep" and wakes the selector. Only
// the producer whose CAS moves asleep -> awake writes the waker, so a burst
// of SetReadiness to a sleeping Poll costs one wake-up. The closed state is
// final: after Poll.Close producers do nothing.
type readinessQueue struct {
	// Read-mostly: written once each, read by every producer. A whole
	// cache line of padding on each side of head keeps the producers'
	// exchanges on it from invalidating these or the consumer's fields,
	// wherever the queue lands within its Poll.
	wake   func()      // writes the selector's waker
	closed atomic.Bool // set by Poll.Close, before sleep becomes queueClosed
	_      cpu.CacheLinePad

	head atomic.Pointer[regNode] // producers: last linked node
	_    cpu.CacheLinePad
	tail *regNode // consumer: next node to unlink (or stub)
	goal *regNode // consumer: the head at mark, nil once passed
	// sleep is queueAwake, queueAsleep or queueClosed; the consumer writes
	// it around every blocking select, so producers read it only when they
	// link a node.
	sleep atomic.Uint32
	stub  regNode
}

const (
	queueAwake uint32 = iota
	queueAsleep
	queueClosed
)

func (q *readinessQueue) init(wake func()) {
	q.head.Store(&q.stub)
	q.tail = &q.stub
	q.wake = wake
}

// link appends n. Any goroutine; see invariant 1 for who may.
func (q *readinessQueue) link(n *regNode) {
	if debugChecks && n != &q.stub {
		checkLink(n)
	}
	n.next.Store(nil)
	prev := q.head.Swap(n)
	if debugChecks && n != &q.stub {
		if f := midLink.Load(); f != nil {
			(*f)(n)
		}
	}
	prev.next.Store(n)
}

// push links n and wakes the consumer if it sleeps. It reports ErrClosed
// after Poll.Close (the node is then garbage, which is harmless).
func (q *readinessQueue) push(n *regNode) error {
	if q.closed.Load() {
		return ErrClosed
	}
	q.link(n)
	if q.sleep.Load() == queueAsleep && q.sleep.CompareAndSwap(queueAsleep, queueAwake) {
		q.wake()
	}
	return nil
}

// mark sets the goal of a drain: the newest node linked so far.
func (q *readinessQueue) mark() {
	q.goal = q.head.Load()
}

// behindGoal reports whether a half-done link that pop ran into may hold
// back a node linked before mark: the goal has not been passed. That
// includes being stuck at the goal itself, a node that cannot be unlinked
// until the push behind it (begun after mark) has linked it; only the
// stub as goal needs nothing (it is no node of anyone's).
func (q *readinessQueue) behindGoal() bool {
	return q.goal != nil && !(q.goal == &q.stub && q.tail == &q.stub)
}

// pop unlinks the oldest node. It returns nil when the queue is empty, and
// nil with midLink set when a producer is half-way through link.
func (q *readinessQueue) pop() (n *regNode, midLink bool) {
	tail := q.tail
	next := tail.next.Load()
	if tail == &q.stub {
		if next == nil {
			return nil, q.head.Load() != tail
		}
		if q.goal == tail {
			q.goal = nil
		}
		q.tail = next
		tail = next
		next = next.next.Load()
	}
	if next != nil {
		q.tail = next
		return q.passed(tail), false
	}
	if q.head.Load() != tail {
		return nil, true
	}
	// tail is the last node: put the stub behind it so it can be unlinked.
	q.link(&q.stub)
	if next = tail.next.Load(); next != nil {
		q.tail = next
		return q.passed(tail), false
	}
	return nil, true
}

// passed notes that n leaves the queue, and returns it.
func (q *readinessQueue) passed(n *regNode) *regNode {
	if q.goal == n {
		q.goal = nil
	}
	return n
}

// prepareSleep announces that the consumer is about to block. It returns
// false, and stays awake, if anything is queued.
func (q *readinessQueue) prepareSleep() bool {
	if !q.sleep.CompareAndSwap(queueAwake, queueAsleep) {
		return false // closed
	}
	if q.pending() {
		q.sleep.CompareAndSwap(queueAsleep, queueAwake)
		return false
	}
	return true
}

// pending reports whether a node is linked or being linked. Consumer only.
func (q *readinessQueue) pending() bool {
	return q.tail != &q.stub || q.head.Load() != &q.stub
}

// finishSleep is called by the consumer when it stops blocking.
func (q *readinessQueue) finishSleep() {
	q.sleep.CompareAndSwap(queueAsleep, queueAwake)
}

func (q *readinessQueue) close() {
	q.closed.Store(true)
	q.sleep.Store(queueClosed)
}
