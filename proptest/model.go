//go:build linux

package proptest

import (
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/sys"
)

// The executable model of the contract (ARCHITECTURE.md, rules 1-11). It
// keeps, for every source registered with one Poll, what the contract lets
// a Poll call report about it, and checks every real Poll result against
// that:
//
//   - MUST appear: a source that is ready for its interest and either
//     level-triggered (rule 3) or owed a notification: an edge arrived
//     (rule 2), or it was (re)registered while ready (rule 5). Oneshot
//     sources only while armed (rule 4).
//   - MAY appear: a registered, armed source with a reason to be reported
//     that the model cannot decide or that the contract tolerates (rule 9):
//     a kernel wake-up without new readiness, a condition re-armed while
//     still there (emulated edge), delayed readiness inside its firing
//     window.
//   - MUST NOT appear: a token never registered, a token retired by
//     Deregister, Reregister or Close (rule 7), readiness outside the
//     interest or not present at all (rule 6), two events for one token in
//     one call (rule 1), a disarmed oneshot source (rule 4), an
//     edge-triggered source with nothing new (rule 2).
//
// Capacity: a Poll call that filled its Events buffer may leave MUST
// sources for later calls; the model carries them over and fails when one
// waited more than carryBound calls (rules 8, 11). A call that did not fill
// the buffer must report every MUST source, unless the backend may have
// spent a slot on an event that Poll filtered out (see impl.filtered).
//
// The kind-independent core is in four files: this one, the vocabulary
// (the kind and impl interfaces a kind of source implements, the backend's
// traits, the model of one source); model_world.go, the world (one Poll
// and its sources, logging, failure messages, the notifications kinds
// report, the end of a check); model_ops.go, the generic operations the
// state machine draws (Register, Reregister, Deregister, Misuse, Open, the
// Poll steps); model_oracle.go, the oracle (one Poll call checked against
// the model, and the model advanced). Steps that reach past a single busy
// goroutine have a file each: model_lag.go, model_blocked.go,
// model_crowd.go.
//
// What is specific to one kind of source (how to create it, what its
// operations do, what readiness it has) lives in one file per kind:
// model_fd.go (socket pairs and pipes), model_registration.go
// (Registration and SetReadiness), model_channel.go (package channel's
// Sender and Receiver). Adding a kind (timer, signal, child) is adding
// such a file with a kind and an impl and calling registerKind from its
// init function.

// kind is one kind of source: it opens real sources and knows their
// operations.
type kind interface {
	// name is a short label, used in action names and source labels.
	name() string
	// open creates a real source and its model.
	open(t *rapid.T, w *world) impl
	// ops are the kind-specific operations on a live source of this kind.
	ops() []op
}

// op is one kind-specific operation.
type op struct {
	name string
	// run draws its parameters, performs the operation on the real object,
	// checks its result and updates the model of s.
	run func(t *rapid.T, w *world, s *src)
}

// impl is the kind-specific part of one source: the real object and the
// model of its readiness.
type impl interface {
	evented() poll.Evented
	// isFd reports whether the source is a descriptor watched by the OS
	// selector (so backend traits such as edge emulation apply).
	isFd() bool
	// ready is the readiness, masked by interest, that an event reporting
	// the source right now must carry at least (sure) and may carry at
	// most (maybe). sure is a subset of maybe.
	ready(interest poll.Ready) (sure, maybe poll.Ready)
	// filtered reports whether the backend may hand Poll an event for
	// this source that Poll then drops (readiness outside interest), which
	// costs a slot in the call's buffer.
	filtered(interest, quiet poll.Ready) bool
	// release destroys the real object; the model has deregistered it
	// when needed. After release the source is gone.
	release(t *rapid.T, w *world, s *src)
	// discard destroys the real object without checking anything (cleanup
	// after a failure).
	discard()
	// String describes the modelled state, for failure messages.
	String() string
}

// timed is implemented by impls whose readiness changes inside Poll
// (delayed readiness fires in the Poll call that finds it due).
type timed interface {
	// beforePoll applies changes that are certain to happen at the start
	// of a Poll call that starts at start.
	beforePoll(t *rapid.T, w *world, s *src, start time.Time)
	// afterPoll resolves, from what can be observed after the call, the
	// changes that may have happened during it, and sets s.firedNow,
	// s.firedEdge and s.callMay accordingly.
	afterPoll(t *rapid.T, w *world, s *src, c *pollCall)
	// pending reports a pending change: the time by which a Poll call
	// will have applied it, and whether it will surely make the source
	// reportable (so that a Poll blocked forever must return by then).
	pending(s *src) (by time.Time, wakes, ok bool)
	// rearmed is called when the registration of s changes (Register,
	// Reregister, Deregister).
	rearmed(s *src)
}

// checker is implemented by impls with invariants to check between
// operations (for example, that observable state matches the model).
type checker interface {
	check(t *rapid.T, w *world, s *src)
}

var kinds []kind

// registerKind adds a kind to the model; kind files call it from init.
func registerKind(k kind) { kinds = append(kinds, k) }

// backend is what the model needs to know about a selector. It asks the
// selector itself (sys.Traits) rather than knowing backends by name.
type backend struct {
	name string
	// edgeEmulated: the selector emulates edge triggering (poll(2)). A
	// condition an event reported is quiet (src.quiet) until the caller
	// ends the pass with Fd.Drained after EAGAIN, or reregisters: an arrival
	// while it is quiet is no new edge there, and is reported once the
	// caller ends the pass. Natively every arrival is an edge and Drained
	// does nothing.
	edgeEmulated bool
	// lastingLatency: a descriptor whose only readiness is a lasting
	// hang-up or error already reported (or outside its interest) may be
	// looked at again only this much later, so a new condition on it (an
	// error after a hang-up) may be reported that late: the selector's
	// RestLatency, plus timer slack. Zero where nothing rests.
	lastingLatency time.Duration
}

func backendOf(name string) backend {
	sel, err := sys.New(name)
	if err != nil {
		panic(fmt.Sprintf("proptest: backend %q: %v", name, err))
	}
	defer sel.Close()
	tr := sel.Traits()
	b := backend{name: name, edgeEmulated: !tr.NativeEdge}
	if tr.RestLatency > 0 {
		b.lastingLatency = tr.RestLatency + 20*time.Millisecond
	}
	return b
}

// backendsUnderTest are the backends the tests run on: the one named by
// UNIPOLL_BACKEND when it is set (CI runs the suite once per backend),
// else every backend this build has.
func backendsUnderTest() []string {
	if b := os.Getenv(sys.EnvBackend); b != "" {
		return []string{b}
	}
	return sys.Backends()
}

// src is the model of one source.
type src struct {
	id    int
	kind  kind
	impl  impl
	label string

	registered bool
	bound      bool // a Registration is bound to the Poll once registered
	token      poll.Token
	interest   poll.Ready
	opts       poll.PollOpt
	armed      bool       // oneshot: false after its event, until Reregister
	owed       bool       // a notification must come: edge arrived, or registered while ready
	mayFire    bool       // a notification may come (rule 9)
	missed     waited     // consecutive calls that had no room for a MUST event of it
	gone       bool       // released/closed: never reported again
	graceUntil time.Time  // MUST events of it may be late until then (backend.lastingLatency)
	mayUntil   time.Time  // a change on it may be reported (late) until then
	quiet      poll.Ready // emulated edge: conditions reported and not re-armed, lasting ones reported (backend.edgeEmulated)

	// Per Poll call, set by timed impls.
	callMay   bool       // an undecidable change may make it reportable in this call
	firedNow  poll.Ready // readiness that became true during this call (observed)
	firedEdge poll.Ready // readiness set during this call as a new edge (observed or not)
	// Per Poll call, set by ChangeBlocked (model_blocked.go): its
	// registration changed during the call (changeMay, changeMust).
	changedNow int8
}

func (s *src) String() string {
	if !s.registered {
		return fmt.Sprintf("%s(unregistered %v)", s.label, s.impl)
	}
	arm := ""
	if s.opts.IsOneshot() && !s.armed {
		arm = " disarmed"
	}
	return fmt.Sprintf("%s(token %d, %s, %s%s, owed=%v may=%v, %v)",
		s.label, s.token, s.interest, s.opts, arm, s.owed, s.mayFire, s.impl)
}

// waited counts the consecutive full Poll calls that left out a source
// whose event was due. The fairness bound (world.carryBound) counts at its
// largest since the wait began: a source that waited behind a thousand
// others is not starved because most of them have just gone.
type waited struct{ calls, bound int }

// miss counts one more such call and reports whether the wait is now past
// the bound.
func (w *waited) miss(bound int) bool {
	w.calls++
	if w.calls == 1 || bound > w.bound {
		w.bound = bound
	}
	return w.calls > w.bound
}

func (w *waited) reset() { *w = waited{} }

// live is the part of sure readiness that can make an event now: for an
// emulated edge, not what is quiet. An owed edge is due only while
// something it may report is there: an edge whose cause is gone (data
// read since) and whose other readiness is quiet makes no event.
func (s *src) live(sure poll.Ready) poll.Ready {
	if s.opts.IsLevel() {
		return sure
	}
	return sure &^ s.quiet
}

// armedNow reports whether the source can be reported at all.
func (s *src) armedNow() bool {
	return s.registered && !s.gone && (!s.opts.IsOneshot() || s.armed)
}

// tokenRec remembers every token ever handed to Register or Reregister:
// tokens are never reused, so an event is attributed exactly.
type tokenRec struct {
	s       *src
	retired string // why it may no longer be reported; "" while current
}

// Totals over the whole test binary, printed by TestMain.
var totals struct {
	checks, ops, polls, events, spurious, carried, rounds atomic.Int64
}
