//go:build linux

package proptest

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/sys"
)

// This file is the kind-independent core of the executable model of the
// contract (ARCHITECTURE.md, rules 1-11). It keeps, for every source registered
// with one Poll, what the contract lets a Poll call report about it, and
// checks every real Poll result against that:
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
// What is specific to one kind of source (how to create it, what its
// operations do, what readiness it has) lives in one file per kind:
// model_fd.go (socket pairs and pipes), model_registration.go
// (Registration and SetReadiness). Adding a kind (channel, timer, signal,
// child) is adding such a file with a kind and an impl and calling
// registerKind from its init function.

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
	// re-arms it with Fd.Rearm after EAGAIN, or reregisters: an arrival
	// while it is quiet is no new edge there, and is reported once the
	// caller re-arms. Natively every arrival is an edge and Rearm does
	// nothing.
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
	missed     int        // consecutive calls that had no room for a MUST event of it
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

// world is one Poll, its sources and their model, for one rapid check.
type world struct {
	be     backend
	cfg    poll.Config
	p      *poll.Poll
	srcs   []*src
	tokens map[poll.Token]*tokenRec
	nextID int
	calls  int
	step   int
	closed bool // the Poll has been closed
	log    func(format string, args ...any)
	hist   []string // the operations so far, for failure messages
	kinds  []kind   // the kinds of source this world opens
	crowd  *crowd   // a large population of Registrations (model_crowd.go), or nil
	kick   *kicker  // ends a Poll blocked by a broken wake-up, after a failure
}

// maxLive bounds the sources alive at once; maxOpened bounds all opened in
// one check (descriptor numbers are reused, tokens are not).
const (
	maxLive   = 6
	maxOpened = 12
)

func newWorld(t *rapid.T, be backend, cfg poll.Config) *world {
	cfg.Backend = be.name
	p, err := poll.NewWithConfig(cfg)
	if err != nil {
		t.Fatalf("poll.NewWithConfig(%+v): %v", cfg, err)
	}
	if got := p.Backend(); got != be.name {
		t.Fatalf("Backend() = %q, want %q", got, be.name)
	}
	totals.checks.Add(1)
	w := &world{be: be, cfg: cfg, p: p, tokens: map[poll.Token]*tokenRec{}, log: t.Logf, kinds: kinds}
	w.kick = newKicker(t, p)
	return w
}

// logf logs one executed operation; rapid prints these for the minimal
// failing case, which makes it read as a script.
func (w *world) logf(format string, args ...any) {
	w.logTimed(fmt.Sprintf(format, args...), "")
}

// logTimed logs one operation with a timing note. The note goes to the log
// only, not into failure messages: rapid accepts a shrunk case only if it
// fails with the very same message, so messages must not vary with timing.
func (w *world) logTimed(line, timing string) {
	w.step++
	totals.ops.Add(1)
	line = fmt.Sprintf("%3d  %s", w.step, line)
	w.hist = append(w.hist, line)
	w.log("%s%s", line, timing)
}

func (w *world) live() []*src {
	var out []*src
	for _, s := range w.srcs {
		if !s.gone {
			out = append(out, s)
		}
	}
	return out
}

func (w *world) registered() []*src {
	var out []*src
	for _, s := range w.srcs {
		if s.registered && !s.gone {
			out = append(out, s)
		}
	}
	return out
}

// describe lists the model state, for failure messages.
func (w *world) describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "backend %s, %d Poll calls; sources:", w.be.name, w.calls)
	for _, s := range w.live() {
		fmt.Fprintf(&b, "\n    %v", s)
	}
	if w.crowd != nil {
		fmt.Fprintf(&b, "\n    %v", w.crowd)
	}
	return b.String()
}

func (w *world) fatalf(t *rapid.T, format string, args ...any) {
	t.Helper()
	h := w.hist
	if len(h) > 80 {
		h = h[len(h)-80:]
	}
	t.Fatalf(format+"\n  model: %s\n  operations (last %d):\n    %s", append(args, w.describe(), len(h), strings.Join(h, "\n    "))...)
}

// expectErr fails unless err matches want (nil meaning success).
func (w *world) expectErr(t *rapid.T, what string, err, want error) {
	t.Helper()
	if want == nil {
		if err != nil {
			w.fatalf(t, "%s: unexpected error %v", what, err)
		}
		return
	}
	if !errors.Is(err, want) {
		w.fatalf(t, "%s: error %v, want %v", what, err, want)
	}
}

// ---- Sources

// open creates a source of kind k.
func (w *world) open(t *rapid.T, k kind) *src {
	w.nextID++
	s := &src{id: w.nextID, kind: k, label: fmt.Sprintf("%s%d", k.name(), w.nextID)}
	s.impl = k.open(t, w)
	w.srcs = append(w.srcs, s)
	return s
}

// pick draws a live source, of kind k if k is not nil; it skips the action
// when there is none.
func (w *world) pick(t *rapid.T, k kind, label string) *src {
	var cand []*src
	for _, s := range w.live() {
		if k == nil || s.kind == k {
			cand = append(cand, s)
		}
	}
	if len(cand) == 0 {
		t.Skip("no such source")
	}
	return cand[rapid.IntRange(0, len(cand)-1).Draw(t, label+" (index among live)")]
}

// ---- Notifications (called by kinds)

// notify records that readiness arrived on s (a new edge: data written,
// SetReadiness, a hang-up). arrived is in reported terms. If it is
// readiness the source is now surely ready for, a notification is owed
// (rule 2); otherwise one may come (rule 9).
func (w *world) notify(s *src, arrived poll.Ready) {
	if !s.armedNow() {
		return
	}
	arrived &^= s.quiet // no edge for a quiet condition until it is re-armed
	sure, maybe := s.impl.ready(s.interest)
	switch {
	case arrived&sure != 0:
		s.owed = true
	case maybe != 0:
		s.mayFire = true
	}
}

// jiggle records a wake-up of s without new readiness (a kernel wake-up
// the contract does not promise anything about): an event may come.
func (w *world) jiggle(s *src) {
	if s.armedNow() {
		s.mayFire = true
	}
}

// retire makes s's current token unreportable.
func (w *world) retire(s *src, why string) {
	if rec := w.tokens[s.token]; rec != nil && rec.retired == "" {
		rec.retired = why
	}
}

// ---- Generic operations

// drawToken returns a token never used before in this world. Tokens come
// in three ranges: small, high (bit 63 set) and just below the reserved
// maximum, so that every bit of the key is exercised.
func (w *world) drawToken(t *rapid.T, label string) poll.Token {
	style := rapid.IntRange(0, 2).Draw(t, label+" range")
	base := map[int]poll.Token{0: 1, 1: 1 << 63, 2: ^poll.Token(0) - 64}[style]
	tok := base + poll.Token(rapid.IntRange(0, 40).Draw(t, label))
	for w.tokens[tok] != nil || tok == ^poll.Token(0) {
		tok++
		if tok == ^poll.Token(0) {
			tok = 1
		}
	}
	return tok
}

var optsChoices = []poll.PollOpt{poll.Level, poll.Edge, poll.Level | poll.Oneshot, poll.Edge | poll.Oneshot}

func drawInterest(t *rapid.T) poll.Ready {
	return poll.Ready(rapid.Uint32Range(1, 31).Draw(t, "interest"))
}

func drawOpts(t *rapid.T) poll.PollOpt {
	return rapid.SampledFrom(optsChoices).Draw(t, "opts")
}

// arm installs a registration in the model; rule 5 makes a ready source
// owed at once.
func (w *world) arm(s *src, tok poll.Token, interest poll.Ready, opts poll.PollOpt) {
	if opts.IsLevel() {
		opts |= poll.Level
	}
	s.registered, s.bound = true, true
	s.token, s.interest, s.opts, s.armed = tok, interest, opts, true
	s.missed, s.quiet = 0, 0
	sure, maybe := s.impl.ready(interest)
	s.owed = sure != 0
	s.mayFire = maybe != 0
	if rec := w.tokens[tok]; rec == nil {
		w.tokens[tok] = &tokenRec{s: s}
	}
	if tm, ok := s.impl.(timed); ok {
		tm.rearmed(s)
	}
}

// Register registers a live source (ErrAlreadyRegistered if it is).
func (w *world) Register(t *rapid.T) {
	s := w.pick(t, nil, "source")
	tok := w.drawToken(t, "token")
	interest, opts := drawInterest(t), drawOpts(t)
	err := w.p.Register(s.impl.evented(), tok, interest, opts)
	w.logf("Register(%s, token %d, %s, %s) = %v", s.label, tok, interest, opts, err)
	if s.registered {
		w.expectErr(t, "Register of a registered source", err, poll.ErrAlreadyRegistered)
		return
	}
	w.expectErr(t, "Register", err, nil)
	w.arm(s, tok, interest, opts)
}

// Reregister changes token (or keeps it), interest and mode.
func (w *world) Reregister(t *rapid.T) {
	s := w.pick(t, nil, "source")
	tok := s.token
	if !s.registered || rapid.Bool().Draw(t, "new token") {
		tok = w.drawToken(t, "token")
	}
	interest, opts := drawInterest(t), drawOpts(t)
	err := w.p.Reregister(s.impl.evented(), tok, interest, opts)
	w.logf("Reregister(%s, token %d, %s, %s) = %v", s.label, tok, interest, opts, err)
	if !s.registered {
		w.expectErr(t, "Reregister of an unregistered source", err, poll.ErrNotRegistered)
		return
	}
	w.expectErr(t, "Reregister", err, nil)
	if tok != s.token {
		w.retire(s, fmt.Sprintf("reregistered as token %d", tok))
	}
	w.arm(s, tok, interest, opts)
}

// Deregister removes a source.
func (w *world) Deregister(t *rapid.T) {
	s := w.pick(t, nil, "source")
	err := w.p.Deregister(s.impl.evented())
	w.logf("Deregister(%s) = %v", s.label, err)
	if !s.registered {
		w.expectErr(t, "Deregister of an unregistered source", err, poll.ErrNotRegistered)
		return
	}
	w.expectErr(t, "Deregister", err, nil)
	w.deregistered(s, "deregistered")
}

// deregistered updates the model after a successful Deregister or Close.
func (w *world) deregistered(s *src, why string) {
	w.retire(s, why)
	s.registered, s.owed, s.mayFire, s.missed = false, false, false, 0
	if tm, ok := s.impl.(timed); ok {
		tm.rearmed(s)
	}
}

// Check runs the invariant checks of every live source.
func (w *world) Check(t *rapid.T) {
	for _, s := range w.live() {
		if c, ok := s.impl.(checker); ok {
			c.check(t, w, s)
		}
	}
	w.crowd.check(t, w)
}

// Misuse calls the API with bad arguments; each must fail with its
// sentinel error and change nothing.
func (w *world) Misuse(t *rapid.T) {
	what := rapid.SampledFrom([]string{
		"nil Evented", "reserved token", "bad interest", "empty interest", "bad opts", "bad Events",
	}).Draw(t, "misuse")
	s := w.pick(t, nil, "source")
	e := s.impl.evented()
	var err, want error
	switch what {
	case "nil Evented":
		want = poll.ErrInvalidArgument
		switch rapid.IntRange(0, 2).Draw(t, "call") {
		case 0:
			err = w.p.Register(nil, 1, poll.Readable, poll.Level)
		case 1:
			err = w.p.Reregister(nil, 1, poll.Readable, poll.Level)
		default:
			err = w.p.Deregister(nil)
		}
	case "reserved token":
		want = poll.ErrReservedToken
		if s.registered {
			err = w.p.Reregister(e, ^poll.Token(0), poll.Readable, poll.Level)
		} else {
			err = w.p.Register(e, ^poll.Token(0), poll.Readable, poll.Level)
		}
	case "bad interest":
		want = poll.ErrInvalidInterest
		bad := poll.Readable | poll.Ready(1)<<rapid.IntRange(5, 31).Draw(t, "bit")
		if s.registered {
			err = w.p.Reregister(e, s.token, bad, poll.Level)
		} else {
			err = w.p.Register(e, 1, bad, poll.Level)
		}
	case "empty interest":
		want = poll.ErrInvalidInterest
		if s.registered {
			err = w.p.Reregister(e, s.token, 0, poll.Level)
		} else {
			err = w.p.Register(e, 1, 0, poll.Level)
		}
	case "bad opts":
		want = poll.ErrInvalidOpts
		bad := rapid.SampledFrom([]poll.PollOpt{poll.Edge | poll.Level, 1 << 3, 1 << 7, poll.Edge | poll.Level | poll.Oneshot}).Draw(t, "opts")
		if s.registered {
			err = w.p.Reregister(e, s.token, poll.Readable, bad)
		} else {
			err = w.p.Register(e, 1, poll.Readable, bad)
		}
	case "bad Events":
		want = poll.ErrInvalidArgument
		if rapid.Bool().Draw(t, "nil") {
			_, err = w.p.Poll(nil, 0)
		} else {
			_, err = w.p.Poll(&poll.Events{}, 0)
		}
	}
	w.logf("misuse %s on %s = %v", what, s.label, err)
	w.expectErr(t, "misuse "+what, err, want)
}

// Open creates a source of a drawn kind.
func (w *world) Open(t *rapid.T) {
	if len(w.live()) >= maxLive || len(w.srcs) >= maxOpened {
		t.Skip("enough sources")
	}
	names := make([]string, len(w.kinds))
	for i, k := range w.kinds {
		names[i] = k.name()
	}
	k := w.kinds[rapid.IntRange(0, len(w.kinds)-1).Draw(t, fmt.Sprintf("kind (index in %v)", names))]
	s := w.open(t, k)
	w.logf("open %s: %v", s.label, s.impl)
}

// KindOp runs a drawn operation of kind k on one of its sources.
func (w *world) KindOp(k kind) func(t *rapid.T) {
	names := make([]string, 0, len(k.ops()))
	byName := map[string]op{}
	for _, o := range k.ops() {
		names = append(names, o.name)
		byName[o.name] = o
	}
	return func(t *rapid.T) {
		s := w.pick(t, k, k.name())
		o := byName[rapid.SampledFrom(names).Draw(t, k.name()+" op")]
		o.run(t, w, s)
	}
}

// ---- Poll

// pollCall is one real Poll call and what it returned.
type pollCall struct {
	idx        int
	capacity   int
	timeout    time.Duration
	start, end time.Time
	got        map[poll.Token]poll.Ready
	order      []poll.Event
}

// carryBound is how many consecutive calls a MUST source may go
// unreported because the buffers were full: with n sources registered
// (the crowd's members included), user-space and OS sources alternating
// and each queue served in order, every source gets a turn within about
// 2n calls.
func (w *world) carryBound() int { return 2*(len(w.registered())+w.crowd.liveCount()) + 2 }

// blockLimit is how long a Poll(-1) may block when the model knows an event
// is due; past it the test closes the Poll and fails.
const blockLimit = time.Second

// Poll checks one non-blocking call with a drawn capacity.
func (w *world) Poll(t *rapid.T) {
	w.poll(t, rapid.IntRange(1, 8).Draw(t, "capacity"), 0)
}

// PollTimeout checks one call with a small timeout, which lets time pass
// (delays come due).
func (w *world) PollTimeout(t *rapid.T) {
	capacity := rapid.IntRange(1, 8).Draw(t, "capacity")
	timeout := time.Duration(rapid.IntRange(1, 5).Draw(t, "timeout ms")) * time.Millisecond
	w.poll(t, capacity, timeout)
}

// PollBlocking calls Poll(-1) when the model knows it must return: a
// source must be reported, or a delay will make one reportable.
func (w *world) PollBlocking(t *rapid.T) {
	if !w.mustReturn() {
		t.Skip("Poll(-1) would block forever")
	}
	w.poll(t, rapid.IntRange(1, 8).Draw(t, "capacity"), -1)
}

func (w *world) mustReturn() bool {
	if w.crowd.mustReturn() {
		return true
	}
	for _, s := range w.registered() {
		if !s.armedNow() {
			continue
		}
		sure, _ := s.impl.ready(s.interest)
		if s.live(sure) != 0 && (s.opts.IsLevel() || s.owed) {
			return true
		}
		if tm, ok := s.impl.(timed); ok {
			if _, wakes, ok := tm.pending(s); ok && wakes {
				return true
			}
		}
	}
	return false
}

// fdExcuse reports whether the selector may return an event that Poll
// drops, so that a call may report fewer events than it has room for and
// still leave a ready source for the next call.
func (w *world) fdExcuse() bool {
	for _, s := range w.registered() {
		if s.impl.isFd() && s.impl.filtered(s.interest, s.quiet) {
			return true
		}
	}
	return false
}

func (w *world) poll(t *rapid.T, capacity int, timeout time.Duration) {
	t.Helper()
	w.pollDuring(t, capacity, timeout, nil)
}

// pollDuring is poll with work d done on another goroutine during the call
// (model_blocked.go); d may be nil.
func (w *world) pollDuring(t *rapid.T, capacity int, timeout time.Duration, d during) {
	t.Helper()
	start := time.Now()
	for _, s := range w.live() {
		s.callMay, s.firedNow, s.firedEdge, s.changedNow = false, 0, 0, 0
		if tm, ok := s.impl.(timed); ok {
			tm.beforePoll(t, w, s, start)
		}
	}
	ev := poll.NewEvents(capacity)
	var watchdog *time.Timer
	var fired atomic.Bool
	if timeout < 0 {
		p := w.p
		kick := w.kick
		watchdog = time.AfterFunc(blockLimit, func() {
			fired.Store(true)
			kick.kick() // in case the bug broke the wake-up that Close needs
			_ = p.Close()
		})
	}
	if d != nil {
		d.start(w.p)
	}
	n, err := w.p.Poll(ev, timeout)
	end := time.Now()
	if d != nil {
		d.returned()
	}
	if watchdog != nil {
		watchdog.Stop()
	}
	if d != nil {
		d.join(t, w)
	}
	if watchdog != nil && fired.Load() {
		w.closed = true
		w.fatalf(t, "Poll(-1) did not return within %v although an event was due (lost wake-up, rules 8, 10)", blockLimit)
	}
	w.calls++
	totals.polls.Add(1)
	c := &pollCall{idx: w.calls, capacity: capacity, timeout: timeout, start: start, end: end, got: map[poll.Token]poll.Ready{}}
	var evs []string
	crowdEvents := 0
	for i := 0; i < ev.Len(); i++ {
		e := ev.At(i)
		c.order = append(c.order, e)
		if w.crowd.owns(e.Token) {
			crowdEvents++
			if crowdEvents > 4 {
				continue // the log shows the first few
			}
		}
		evs = append(evs, fmt.Sprintf("%d:%s", e.Token, e.Ready))
	}
	if crowdEvents > 4 {
		evs = append(evs, fmt.Sprintf("(%d crowd events in all)", crowdEvents))
	}
	w.logTimed(fmt.Sprintf("Poll#%d(cap %d, timeout %v) = %d %v [%s]", c.idx, capacity, timeout, n, err, strings.Join(evs, " ")),
		fmt.Sprintf(" in %v", end.Sub(start).Round(time.Microsecond)))
	if err != nil {
		w.fatalf(t, "Poll: %v", err)
	}
	if n != ev.Len() || n > capacity {
		w.fatalf(t, "Poll returned %d, Events holds %d, capacity %d", n, ev.Len(), capacity)
	}
	if n == 0 && timeout > 0 && end.Sub(start) < timeout {
		t.Logf("returned after %v", end.Sub(start))
		w.fatalf(t, "Poll#%d returned no event before its timeout %v", c.idx, timeout)
	}
	for _, e := range c.order {
		if _, dup := c.got[e.Token]; dup {
			w.fatalf(t, "Poll#%d reported token %d twice (rule 1): %v", c.idx, e.Token, c.order)
		}
		c.got[e.Token] = e.Ready
	}
	totals.events.Add(int64(n))
	for _, s := range w.live() {
		if tm, ok := s.impl.(timed); ok {
			tm.afterPoll(t, w, s, c)
		}
	}
	w.checkCall(t, c)
}

// checkCall compares one Poll result with the model and advances the model.
func (w *world) checkCall(t *rapid.T, c *pollCall) {
	t.Helper()
	// Attribution: every reported token must be current (the crowd's are
	// checked by the crowd).
	for _, e := range c.order {
		if w.crowd.owns(e.Token) {
			continue
		}
		if e.Token == kickToken {
			w.fatalf(t, "Poll#%d reported the kicker (token %d), which nothing kicked", c.idx, e.Token)
		}
		rec := w.tokens[e.Token]
		switch {
		case rec == nil:
			w.fatalf(t, "Poll#%d reported token %d, which was never registered (rule 7)", c.idx, e.Token)
		case rec.retired != "":
			w.fatalf(t, "Poll#%d reported token %d (%s) with %s, but that token was %s before the call: a stale event (rule 7)",
				c.idx, e.Token, rec.s.label, e.Ready, rec.retired)
		case !rec.s.registered || rec.s.gone || rec.s.token != e.Token:
			w.fatalf(t, "Poll#%d reported token %d for %s, which is not registered with it (rule 7)", c.idx, e.Token, rec.s.label)
		}
	}
	full := len(c.order) == c.capacity
	excuse := w.fdExcuse()
	drained := !full && !excuse
	bound := w.carryBound()
	// Sort for deterministic failure messages.
	regs := w.registered()
	sort.Slice(regs, func(i, j int) bool { return regs[i].id < regs[j].id })
	for _, s := range regs {
		sure, maybe := s.impl.ready(s.interest)
		sure &^= s.firedNow // became ready during the call: the event may precede it
		armed := s.armedNow()
		level := s.opts.IsLevel()
		fired := s.firedEdge & s.interest
		witness := s.firedNow & s.interest
		// An owed edge is due only while something it may report is
		// there: under an emulated edge, quiet conditions are not asked
		// for, so an edge whose cause is gone (data read since) and whose
		// other readiness is quiet makes no event.
		must := armed && ((s.live(sure) != 0 && (level || s.owed)) || fired != 0)
		if must && c.start.Before(s.graceUntil) {
			must = false // may still be resting in the backend (lastingLatency)
		}
		if s.changedNow == changeMay {
			must = false // registered during the call, which may have ended first
		}
		may := armed && (sure|maybe) != 0 && (level || s.owed || s.mayFire || s.callMay || fired != 0 || c.start.Before(s.mayUntil))
		r, reported := c.got[s.token]
		if reported {
			switch {
			case s.opts.IsOneshot() && !s.armed:
				w.fatalf(t, "Poll#%d reported %s (token %d, %s) again although it is oneshot and was not reregistered since its event (rule 4)", c.idx, s.label, s.token, r)
			case r == 0:
				w.fatalf(t, "Poll#%d reported %s with empty readiness", c.idx, s.label)
			case r&^s.interest != 0:
				w.fatalf(t, "Poll#%d reported %s with %s, outside its interest %s (rule 6)", c.idx, s.label, r, s.interest)
			case r&^maybe != 0:
				w.fatalf(t, "Poll#%d reported %s with %s, but only %s can be ready (stale or invented readiness)", c.idx, s.label, r, maybe)
			case sure&^r&^s.quiet != 0:
				// An emulated edge may leave out what an earlier event
				// reported and the caller has not re-armed (kqueue's
				// per-filter edges do the same).
				w.fatalf(t, "Poll#%d reported %s with %s, missing %s which is ready (incomplete event)", c.idx, s.label, r, sure&^r&^s.quiet)
			case !may:
				w.fatalf(t, "Poll#%d reported %s (%s, %s) with %s, but nothing new arrived since its last event (rule 2: one notification per edge)", c.idx, s.label, s.interest, s.opts, r)
			}
			if !must {
				totals.spurious.Add(1)
			}
			s.missed = 0
			switch {
			case s.opts.IsOneshot():
				s.armed, s.owed, s.mayFire = false, false, false
			case level:
				s.owed, s.mayFire = false, false
			default:
				// An edge that arrived during the call after the source had
				// been reported in it is owed to the next call; when that
				// cannot be told from the event, one may come.
				s.owed = witness != 0 && r&witness != witness
				s.mayFire = s.callMay || (fired != 0 && witness == 0)
				if w.be.edgeEmulated {
					if fi, ok := s.impl.(fdImpl); ok {
						// What it asked for and got, and the lasting
						// hang-up or error it has now reported once.
						s.quiet |= fdQuieted(fi.kernel(), s.interest, s.quiet) | r&(poll.Error|poll.Hup)
					}
				}
			}
			continue
		}
		if must {
			if !full && !excuse {
				late := ""
				if !s.graceUntil.IsZero() {
					late = fmt.Sprintf(", even after the %v the backend may take to look again at a resting descriptor", w.be.lastingLatency)
				}
				w.fatalf(t, "Poll#%d did not report %s (token %d, %s, %s, ready %s) although it had room (%d of %d)%s: a lost event (rules %s)",
					c.idx, s.label, s.token, s.interest, s.opts, sure|fired, len(c.order), c.capacity, late, ruleFor(s))
			}
			s.missed++
			totals.carried.Add(1)
			if s.missed > bound {
				w.fatalf(t, "%s (token %d, %s, %s, ready %s) was not reported by %d consecutive Poll calls that were full: starved (rules 8, 11)",
					s.label, s.token, s.interest, s.opts, sure|fired, s.missed)
			}
			if !level {
				s.owed = true
			}
		} else {
			s.missed = 0
		}
		if s.callMay && !drained {
			s.mayFire = true // it may be waiting in a queue that did not fit
		}
		if drained && s.changedNow != changeMay {
			s.mayFire = false
			if s.owed && sure == 0 && fired == 0 {
				s.owed = false // the notification was for readiness that is gone (rule 6)
			}
		}
	}
	w.crowd.checkCall(t, w, c, drained, bound)
}

func ruleFor(s *src) string {
	switch {
	case s.opts.IsOneshot():
		return "4, 5"
	case s.opts.IsLevel():
		return "3, 5"
	default:
		return "2, 5"
	}
}

// settle ends a check: it polls until nothing is owed any more (waiting
// for pending delays to come due), so that a notification lost by the last
// operations is found.
func (w *world) settle(t *rapid.T) {
	w.crowd.settle(t, w)
	deadline := time.Now()
	for _, s := range w.registered() {
		if s.graceUntil.After(deadline) {
			deadline = s.graceUntil
		}
		if tm, ok := s.impl.(timed); ok {
			if by, _, ok := tm.pending(s); ok && by.After(deadline) {
				deadline = by
			}
		}
	}
	if d := time.Until(deadline); d > 0 {
		time.Sleep(d)
	}
	for i := 0; i <= w.carryBound()+1; i++ {
		w.poll(t, 8, 0)
	}
}

// actions is the state machine's action map for rapid's T.Repeat: the
// generic operations, and one action per kind that runs one of its
// operations.
func (w *world) actions() map[string]func(*rapid.T) {
	a := map[string]func(*rapid.T){
		"":              w.Check,
		"Open":          w.Open,
		"Register":      w.Register,
		"Reregister":    w.Reregister,
		"Deregister":    w.Deregister,
		"Misuse":        w.Misuse,
		"Poll":          w.Poll,
		"PollTimeout":   w.PollTimeout,
		"PollBlocking":  w.PollBlocking,
		"Lag":           w.Lag,
		"ChangeBlocked": w.ChangeBlocked,
	}
	for _, k := range w.kinds {
		a[k.name()] = w.KindOp(k)
	}
	return a
}

// cleanup releases whatever is left without checking anything (after a
// failure).
func (w *world) cleanup() {
	w.crowd.discard()
	for _, s := range w.srcs {
		if !s.gone {
			s.gone = true
			s.impl.discard()
		}
	}
	if !w.closed {
		w.closed = true
		w.kick.kick()
		_ = w.p.Close()
	}
	w.kick.close()
}

// shutdown releases every source and closes the Poll, checking that a
// closed Poll refuses everything with ErrClosed.
func (w *world) shutdown(t *rapid.T) {
	defer w.kick.close()
	w.crowd.discard()
	for _, s := range w.live() {
		s.impl.release(t, w, s)
		s.gone = true
	}
	if w.closed {
		return
	}
	w.closed = true
	if err := w.p.Close(); err != nil {
		t.Fatalf("Poll.Close: %v", err)
	}
	if err := w.p.Close(); !errors.Is(err, poll.ErrClosed) {
		t.Fatalf("second Poll.Close = %v, want ErrClosed", err)
	}
	if _, err := w.p.Poll(poll.NewEvents(1), 0); !errors.Is(err, poll.ErrClosed) {
		t.Fatalf("Poll after Close = %v, want ErrClosed", err)
	}
	r, _ := poll.NewRegistration()
	if err := w.p.Register(r, 1, poll.Readable, poll.Level); !errors.Is(err, poll.ErrClosed) {
		t.Fatalf("Register after Close = %v, want ErrClosed", err)
	}
	_ = r.Close()
}
