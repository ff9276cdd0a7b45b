package poll

import (
	"sync/atomic"
)

// The readiness queue carries Registrations that may have become ready from
// producer goroutines (SetReadiness, from anywhere) to the one consumer (the
// goroutine inside Poll, serialised by pollMu). The consumer moves every
// node it unlinks into its held list (held.go) and keeps it there, still
// queued, for as long as it is in use.
//
// Node state. Each Registration has one regNode whose shared state is one
// atomic word (see state bits in registration.go): readiness, interest,
// mode, and the flags queued, fired, registered and dropped. Every change is
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
//     insertion and no double unlink (mio's list corruption).
//  2. fired is set by every SetReadiness that sets a bit of the interest
//     (an edge), and by a Register or Reregister that finds the node ready
//     for its new interest (rule 5); it is cleared by the consumer's CAS
//     that reports the node, and when the consumer unlinks it. A producer
//     that fires a node either finds queued already set (the node is linked,
//     the consumer looks at it again and its CAS reads the word after ours)
//     or sets queued itself and links the node. No readiness is lost between
//     a report and the next edge.
//  3. The consumer decides with one CAS over the whole word: the event it
//     reports (readiness&interest), the clear of fired, the disarm of
//     oneshot (interest cleared, and the node unlinked) happen together; the
//     unlink of an idle node is a CAS that expects fired clear. A concurrent
//     SetReadiness is either included or seen by the consumer's next look.
//  4. The consumer looks at every held node at least once per pass over the
//     held list (a FIFO: looked-at nodes go to its back), and before it
//     blocks it unlinks every held node that has nothing to report; if one
//     has, it does not block. So a producer that fires a held node is never
//     left without a consumer that will look, although it writes no waker.
//     A level node is reported whenever it is ready; an edge node whenever
//     it has fired. A node reported in the current Poll call waits for the
//     next (its epoch), which keeps "at most one event per token per Poll".
//  5. dropped (Registration.Close) and !registered (Deregister) nodes that
//     are still linked are unlinked and forgotten by the consumer; the GC
//     reclaims them once unreachable, so there is no reference count to get
//     wrong and no use after free.
//  6. The token of an event and the interest that filtered it come from one
//     snapshot of the state word: Reregister publishes a new token slot and
//     the new interest in one CAS, and the consumer's delivering CAS pins
//     the slot it reads (see stTokWriteShift in registration.go). An event
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
// Sleep. The consumer announces that it is about to block with the sleep
// word (awake -> asleep), then checks the queue once more; a producer links
// its node first and then looks at the sleep word. Both steps are
// sequentially consistent atomics, so either the consumer sees the node and
// does not block, or the producer sees "asleep" and wakes the selector. Only
// the producer whose CAS moves asleep -> awake writes the waker, so a burst
// of SetReadiness to a sleeping Poll costs one wake-up. The closed state is
// final: after Poll.Close producers do nothing.
type readinessQueue struct {
	// Read-mostly: written once each, read by every producer.
	wake   func()      // writes the selector's waker
	closed atomic.Bool // set by Poll.Close, before sleep becomes queueClosed
	_      [48]byte

	head atomic.Pointer[regNode] // producers: last linked node
	_    [56]byte                // keep head's cache line apart from the consumer's
	tail *regNode                // consumer: next node to unlink (or stub)
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
	n.next.Store(nil)
	prev := q.head.Swap(n)
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

// pop unlinks the oldest node. It returns nil when the queue is empty, and
// nil with busy set when a producer is half-way through link.
func (q *readinessQueue) pop() (n *regNode, busy bool) {
	tail := q.tail
	next := tail.next.Load()
	if tail == &q.stub {
		if next == nil {
			return nil, q.head.Load() != tail
		}
		q.tail = next
		tail = next
		next = next.next.Load()
	}
	if next != nil {
		q.tail = next
		return tail, false
	}
	if q.head.Load() != tail {
		return nil, true
	}
	// tail is the last node: put the stub behind it so it can be unlinked.
	q.link(&q.stub)
	if next = tail.next.Load(); next != nil {
		q.tail = next
		return tail, false
	}
	return nil, true
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
