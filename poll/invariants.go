package poll

import "sync/atomic"

// Assertions of impossible states.
//
// The readiness queue and the held list rest on invariants
// (readiness_queue.go) that no test can see directly: a bug that breaks one
// shows, if at all, operations later, as an event lost or reported twice.
// Built with the unipoll_debug tag (CI's test runs use it), the producers
// and the consumer check them where they rely on them and panic at once,
// as the Go runtime's netpoller throws on "corrupted polldesc", so that a
// property test fails at the step that broke one, with the stack of the
// goroutine that did. In a normal build debugChecks is false, and every
// check, guarded by it, is compiled away.
//
// Checked:
//   - A node is linked at most once, and only by the goroutine whose CAS
//     set queued (invariant 1): link sets stLinked and must find it clear
//     and queued set; the consumer clears stLinked in the CAS that clears
//     queued.
//   - Every node the consumer takes from the queue or holds has queued set
//     (invariant 1), and stLinked.
//   - A node is reported at most once per pass (invariant 4: its epoch).
//   - The consumer never blocks holding a node (invariant 4: no blocking
//     without a look; releaseHeld lets go of every node with nothing to
//     report, and a node with something stops the pass from blocking).
//   - The consumer never takes from an empty held ring.
//   - A wheel entry is in exactly the slot vector it names: the wheel
//     checks its own (internal/base/wheel, invariant 1, with the same tag).

// stLinked (invariants_debug.go) is the state word's debug bit (see
// registration.go for the others; bits 32 to 63 are free): link sets it,
// the consumer clears it with stQueued. In a normal build it is 0, so the
// masks that clear it are the very constants they would be without it.

// corrupted reports a broken invariant. Only checks guarded by debugChecks
// call it.
func corrupted(what string) {
	panic("poll: corrupted readiness queue: " + what)
}

// checkLink is called by link for every node but the stub, before the node
// is visible to the consumer.
func checkLink(n *regNode) {
	old := n.state.Or(stLinked)
	if old&stLinked != 0 {
		corrupted("node linked twice (invariant 1)")
	}
	if old&stQueued == 0 {
		corrupted("node linked without queued set (invariant 1)")
	}
}

// checkHeld is called with the state word of a node that the consumer takes
// from the queue or holds.
func checkHeld(s uint64) {
	if s&stQueued == 0 {
		corrupted("held node without queued (invariant 1)")
	}
	if s&stLinked == 0 {
		corrupted("held node that link never saw (invariant 1)")
	}
}

// afterSelect, when a test built with unipoll_debug sets it, runs between
// the selector's return and the delivery of its events: the window in which
// a concurrent Reregister or Deregister finds kernel events harvested and
// not yet delivered. Guarded by debugChecks, so a normal build never loads
// it; atomic, because tests of other Polls may be polling meanwhile.
var afterSelect atomic.Pointer[func(*Poll)]

// midLink and midLinkWait, when a test built with unipoll_debug sets them,
// run in a producer between the exchange and the link of its node (the
// queue's half-done link), and in the consumer each time it waits for such
// a link to finish. Guarded by debugChecks, as afterSelect.
// afterMark runs in the consumer right after a drain marks its goal.
var (
	midLink     atomic.Pointer[func(*regNode)]
	midLinkWait atomic.Pointer[func()]
	afterMark   atomic.Pointer[func()]
)
