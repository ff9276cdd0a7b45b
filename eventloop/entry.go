package eventloop

import (
	"sync"
	"sync/atomic"

	"github.com/unipoll/unipoll/poll"
)

// An entry is one source on the Loop: its handler, its registration and
// the word that says who may call the handler. Entries live in the table
// (table.go) and are reused: each use is an incarnation, numbered by a
// generation that is part of the source's token.
//
// The state word holds the generation (bits 32-62) and the flags below.
// Invariants:
//
//  1. The generation changes only in free, once per incarnation, after
//     Removed has returned, together with the clearing of the run-queue
//     fields (on the run-queue owner, see runq.go). Every claim, and every
//     routing of an event or run-queue item, compares it with the
//     generation of the token or item, so nothing meant for an earlier
//     incarnation reaches a later one: not a kernel event still in a
//     batch, not a queued item, not a stale token passed to Remove.
//  2. A claim sets fRunning with one CAS, only from a state with this
//     generation, fLive set and fRunning, fRemoved, fDisarmed clear. The
//     claimer calls Ready, applies the Action and clears fRunning (the
//     release). So at most one call of a handler is in progress: Ready
//     never runs concurrently with itself. With several workers, claims
//     and releases happen under Loop.mu as well, so an event that finds
//     the entry running is kept (entry.again) and not lost.
//  3. fRemoved is set once, by the CAS in remove, which also clears
//     fLive; no claim succeeds after it. That CAS decides who runs
//     Removed: remove, if it saw fRunning clear (then no call is in
//     progress and none can start); otherwise the releaser, whose clearing
//     of fRunning sees fRemoved. Removed therefore runs exactly once, after
//     the last Ready returned. remove deregisters the source before its
//     CAS, so the deregistration is over before Removed can run (and close
//     the descriptor).
//  4. Changes to the source's registration in the Poll (Reregister for
//     Rearm, Disarm and SetInterest, Deregister for Remove) happen under entry.mu
//     together with the flag they go with, and only while fLive is set.
//     So when entry.mu is free, the Poll's registration and the flags
//     agree: a disarmed source is deregistered (entry.deregistered) or is
//     a spent Oneshot, and a removed one is not registered.
//  5. h, own, src, interest, opts, lvl are written by Add before the store of
//     fLive that publishes the incarnation, and cleared by free after
//     fRemoved; they are read by a claimer after its CAS, or under
//     entry.mu after checking fLive and the generation.
//  6. hint is the one field read with no claim at all (ahead.go): a
//     pointer to an immutable value, stored by Add and cleared by free,
//     so a reader gets an old, a new or no handler, never half of one.
//     What it is used for is a prefetch, harmless on any of them.
type entry struct {
	state atomic.Uint64

	h        SourceHandler
	own      ownSource // one of the Loop's own sources (own.go), set once; h is nil
	src      poll.Evented
	interest poll.Ready
	opts     poll.PollOpt // guarded by mu once added (SetMode changes it)
	oneshot  bool         // opts has Oneshot: set at Add, never changed (SetMode keeps it), read without mu
	lvl      *level
	idx      uint32
	caller   *worker                 // the worker calling h, during the call (ReadBuffer)
	hint     atomic.Pointer[hintRef] // h, if it names its lines ahead (invariant 6)

	mu           sync.Mutex // invariant 4
	deregistered bool       // Disarm took it out of the Poll; guarded by mu

	// Run-queue fields, owned by the run-queue owner (runq.go).
	ready  poll.Ready // readiness merged since the last call
	queued bool       // an item of this incarnation is in the run queue or the next list
	again  bool       // several workers: an event came while it ran; requeue at release
}

// State flags; the generation is above them.
const (
	fLive     = uint64(1) << 0
	fRunning  = uint64(1) << 1
	fRemoved  = uint64(1) << 2
	fDisarmed = uint64(1) << 3

	genShift = 32
	genMask  = uint64(1)<<31 - 1
)

func stateGen(s uint64) uint32 { return uint32(s >> genShift & genMask) }

// claimable reports whether a claim may start from state s for generation gen.
func claimable(s uint64, gen uint32) bool {
	return stateGen(s) == gen && s&(fLive|fRunning|fRemoved|fDisarmed) == fLive
}

// release clears fRunning and reports whether the entry was removed
// meanwhile, in which case the caller owes Removed (invariant 3).
func (e *entry) release() (removed bool) {
	return e.state.And(^fRunning)&fRemoved != 0
}

// live reports whether tok's incarnation is on the Loop (added, not
// removed), and returns the state it saw.
func (e *entry) liveAt(gen uint32) (uint64, bool) {
	s := e.state.Load()
	return s, stateGen(s) == gen && s&fLive != 0
}
