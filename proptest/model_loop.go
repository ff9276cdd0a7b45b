//go:build linux

package proptest

import (
	"errors"
	"fmt"
	"strings"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/poll"
)

// This file is the executable model of the event loop (package
// eventloop): sources added with Loop.Add, the actions their handlers
// return, the same changes made from outside (Rearm, Disarm, Remove,
// Trigger), stale tokens, priorities and the cap on calls per iteration.
// It drives a real Loop one iteration at a time with Loop.RunOnce(0), so
// that each iteration's calls can be predicted, and checks every call
// against the model.
//
// The sources are Registrations (their readiness is exactly known; the
// poll contract for descriptors has its own model in model_fd.go). For
// each iteration the model derives, from the poll contract, which sources
// the Poll reports (rule 3 for Level, rule 2 for Edge, rule 4 for Oneshot,
// rule 5 after a Reregister), adds those a Rearm action or a Trigger
// queued, and keeps them as pending calls, as the Loop's run queue does.
// Then:
//
//   - MUST NOT: a call for a source that is removed, disarmed, or has no
//     pending call; two calls for one source in one iteration; a call
//     after the source's Removed; more calls than the cap; a call out of
//     priority order; readiness other than Readable, or a call caused by a
//     Poll event without Readable.
//   - MUST: below the cap, every pending call of an enabled source is made
//     in the iteration; at the cap, every pending call left behind has a
//     priority no higher than the lowest one made (priority is strict
//     across iterations, and nothing pending is lost: it stays pending).
//   - Removed runs exactly once: before Remove returns when no Run is
//     active, right after the call that returned the Remove action, and at
//     Close for the sources left.
//
// Ties of priority at the cap make one thing unknowable: whether a pending
// call of a disarmed or removed source at the lowest priority made was
// reached (and dropped) or is still queued. The model then keeps it as a
// possible call (pendMaybe), which a later iteration may make (after a
// Rearm) or not.

// pendState is a source's pending call in the Loop's run queue.
type pendState uint8

const (
	pendNone  pendState = iota
	pendMaybe           // queued or already dropped: a call may come
	pendMust            // queued: a call comes, unless the source is disabled
)

func (p pendState) String() string { return [...]string{"none", "maybe", "must"}[p] }

// loopSrc is the model of one source on the Loop.
type loopSrc struct {
	id    int
	label string
	reg   *poll.Registration
	set   *poll.SetReadiness
	tok   poll.Token
	opts  poll.PollOpt
	prio  int

	ready     bool // Readable is set on the Registration
	pollArmed bool // registered with Readable interest (not spent by Oneshot, not disarmed)
	owed      bool // Edge: an edge the Poll has not reported yet
	disarmed  bool // the Loop's own flag: no calls
	requeued  bool // a Rearm action of an armed source: queued for the next iteration
	triggered bool // Trigger: queued for the next iteration
	removed   bool
	pend      pendState
	polled    bool // the Poll reported it in the current iteration

	action  eventloop.Action // what its handler returns
	removes int              // Removed calls seen
}

func (s *loopSrc) String() string {
	if s.removed {
		return fmt.Sprintf("%s(removed, %d Removed)", s.label, s.removes)
	}
	return fmt.Sprintf("%s(%s prio %d ready=%v armed=%v owed=%v disarmed=%v requeued=%v triggered=%v pend=%v next=%v)",
		s.label, s.opts, s.prio, s.ready, s.pollArmed, s.owed, s.disarmed, s.requeued, s.triggered, s.pend, s.action)
}

// loopCall is one observed call: of Ready, or of Removed.
type loopCall struct {
	s       *loopSrc
	ev      poll.Event
	removed bool
}

// loopWorld is one Loop and the model of its sources.
type loopWorld struct {
	l      *eventloop.Loop
	cap    int // Config.MaxEventsPerIteration; 0 none
	srcs   []*loopSrc
	byTok  map[poll.Token]*loopSrc
	nextID int
	inIter bool       // RunOnce in progress: calls are expected
	calls  []loopCall // what the handlers saw, in order, since the last check
	stray  []string   // calls outside RunOnce, Close or Remove
	hist   []string
	log    func(format string, args ...any)
}

// loopHandler is a source's handler: it records the call and returns the
// action the model holds for the source.
type loopHandler struct {
	w *loopWorld
	s *loopSrc
}

func (h *loopHandler) Ready(l *eventloop.Loop, ev poll.Event) eventloop.Action {
	if !h.w.inIter {
		h.w.stray = append(h.w.stray, fmt.Sprintf("Ready(%s) outside RunOnce", h.s.label))
	}
	h.w.calls = append(h.w.calls, loopCall{s: h.s, ev: ev})
	return h.s.action
}

func (h *loopHandler) Removed(l *eventloop.Loop, t poll.Token) {
	if t != h.s.tok {
		h.w.stray = append(h.w.stray, fmt.Sprintf("Removed(%s) with token %#x, want %#x", h.s.label, uint64(t), uint64(h.s.tok)))
	}
	h.s.removes++
	h.w.calls = append(h.w.calls, loopCall{s: h.s, removed: true})
}

const loopMaxLive = 8

// loopPrios are the priorities drawn: a few, so that ties are common.
var loopPrios = []int{-1, 0, 0, 1, 2}

func newLoopWorld(t *rapid.T, backend string) *loopWorld {
	cfg := eventloop.Config{
		Poll:                  poll.Config{Backend: backend},
		MaxEventsPerIteration: rapid.SampledFrom([]int{0, 0, 1, 2, 3}).Draw(t, "MaxEventsPerIteration (0 none)"),
	}
	l, err := eventloop.New(cfg)
	if err != nil {
		t.Fatalf("eventloop.New: %v", err)
	}
	totals.checks.Add(1)
	return &loopWorld{l: l, cap: cfg.MaxEventsPerIteration, byTok: map[poll.Token]*loopSrc{}, log: t.Logf}
}

func (w *loopWorld) logf(format string, args ...any) {
	totals.ops.Add(1)
	line := fmt.Sprintf("%3d  %s", len(w.hist)+1, fmt.Sprintf(format, args...))
	w.hist = append(w.hist, line)
	w.log("%s", line)
}

func (w *loopWorld) fatalf(t *rapid.T, format string, args ...any) {
	t.Helper()
	var b strings.Builder
	for _, s := range w.srcs {
		fmt.Fprintf(&b, "\n    %v", s)
	}
	h := w.hist
	if len(h) > 60 {
		h = h[len(h)-60:]
	}
	t.Fatalf(format+"\n  model (cap %d):%s\n  operations (last %d):\n    %s", append(args, w.cap, b.String(), len(h), strings.Join(h, "\n    "))...)
}

func (w *loopWorld) live() []*loopSrc {
	var out []*loopSrc
	for _, s := range w.srcs {
		if !s.removed {
			out = append(out, s)
		}
	}
	return out
}

func (w *loopWorld) pick(t *rapid.T, removed bool) *loopSrc {
	var cand []*loopSrc
	for _, s := range w.srcs {
		if s.removed == removed {
			cand = append(cand, s)
		}
	}
	if len(cand) == 0 {
		t.Skip("no such source")
	}
	return cand[rapid.IntRange(0, len(cand)-1).Draw(t, "source (index)")]
}

// actions are the state machine's operations.
func (w *loopWorld) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"":        w.Check,
		"Add":     w.Add,
		"Set":     w.Set,
		"Unset":   w.Unset,
		"Action":  w.Action,
		"Rearm":   w.Rearm,
		"Disarm":  w.Disarm,
		"Remove":  w.Remove,
		"Trigger": w.Trigger,
		"Stale":   w.Stale,
		"Iterate": w.Iterate,
	}
}

// Check runs after every operation.
func (w *loopWorld) Check(t *rapid.T) {
	if len(w.stray) > 0 {
		w.fatalf(t, "unexpected handler calls: %v", w.stray)
	}
	for _, s := range w.srcs {
		want := 0
		if s.removed {
			want = 1
		}
		if s.removes != want {
			w.fatalf(t, "%s: Removed ran %d times, want %d", s.label, s.removes, want)
		}
	}
}

func (w *loopWorld) Add(t *rapid.T) {
	if len(w.live()) >= loopMaxLive {
		t.Skip("enough sources")
	}
	w.nextID++
	s := &loopSrc{id: w.nextID, label: fmt.Sprintf("r%d", w.nextID)}
	s.opts = rapid.SampledFrom(optsChoices).Draw(t, "opts")
	s.prio = rapid.SampledFrom(loopPrios).Draw(t, "priority")
	s.reg, s.set = poll.NewRegistration()
	if rapid.Bool().Draw(t, "ready before Add") {
		if err := s.set.SetReadiness(poll.Readable); err != nil {
			w.fatalf(t, "SetReadiness: %v", err)
		}
		s.ready = true
	}
	tok, err := w.l.Add(s.reg, poll.Readable, s.opts, &loopHandler{w, s}, eventloop.Priority(s.prio))
	w.logf("Add(%s, %s, priority %d, ready %v) = %#x, %v", s.label, s.opts, s.prio, s.ready, uint64(tok), err)
	if err != nil {
		w.fatalf(t, "Add: %v", err)
	}
	if !eventloop.IsLoopToken(tok) || w.byTok[tok] != nil {
		w.fatalf(t, "Add returned token %#x: not a fresh Loop token", uint64(tok))
	}
	s.tok = tok
	w.byTok[tok] = s
	w.srcs = append(w.srcs, s)
	// Registering a ready source owes a report (rule 5).
	s.pollArmed, s.owed = true, s.ready
}

func (w *loopWorld) Set(t *rapid.T) {
	s := w.pick(t, false)
	err := s.set.SetReadiness(poll.Readable)
	w.logf("SetReadiness(%s) = %v", s.label, err)
	if err != nil {
		w.fatalf(t, "SetReadiness: %v", err)
	}
	s.ready = true
	if s.pollArmed {
		s.owed = true // a new edge (each SetReadiness is one)
	}
}

func (w *loopWorld) Unset(t *rapid.T) {
	s := w.pick(t, false)
	err := s.set.UnsetReadiness(poll.Readable)
	w.logf("UnsetReadiness(%s) = %v", s.label, err)
	if err != nil {
		w.fatalf(t, "UnsetReadiness: %v", err)
	}
	// An edge not yet reported is not reported without its readiness,
	// and readiness only comes back with a new edge.
	s.ready, s.owed = false, false
}

func (w *loopWorld) Action(t *rapid.T) {
	s := w.pick(t, false)
	s.action = rapid.SampledFrom([]eventloop.Action{eventloop.Keep, eventloop.Keep, eventloop.Rearm, eventloop.Rearm,
		eventloop.Disarm, eventloop.Remove}).Draw(t, "action")
	w.logf("%s returns %v from now on", s.label, s.action)
}

// reregistered is the model of the Reregister that Rearm makes: armed,
// and owed a report if ready (rule 5).
func (s *loopSrc) reregistered() { s.pollArmed, s.owed = true, s.ready }

func (w *loopWorld) Rearm(t *rapid.T) {
	s := w.pick(t, false)
	err := w.l.Rearm(s.tok)
	w.logf("Rearm(%s) = %v", s.label, err)
	w.noCalls(t, "Rearm")
	if err != nil {
		w.fatalf(t, "Rearm: %v", err)
	}
	s.disarmed = false
	s.reregistered()
}

func (w *loopWorld) Disarm(t *rapid.T) {
	s := w.pick(t, false)
	err := w.l.Disarm(s.tok)
	w.logf("Disarm(%s) = %v", s.label, err)
	w.noCalls(t, "Disarm")
	if err != nil {
		w.fatalf(t, "Disarm: %v", err)
	}
	if !s.disarmed { // disarming a disarmed source does nothing
		s.disarmed = true
		s.pollArmed, s.owed = false, false // reregistered with no interest
	}
}

func (w *loopWorld) Remove(t *rapid.T) {
	s := w.pick(t, false)
	err := w.l.Remove(s.tok)
	w.logf("Remove(%s) = %v", s.label, err)
	if err != nil {
		w.fatalf(t, "Remove: %v", err)
	}
	// No Run is active: Removed has run before Remove returned.
	if len(w.calls) != 1 || !w.calls[0].removed || w.calls[0].s != s {
		w.fatalf(t, "Remove(%s) made calls %v, want its Removed alone", s.label, w.calls)
	}
	w.calls = w.calls[:0]
	s.removed = true
	s.pend = pendNone // its queued item, if any, is of a past generation now
	_ = s.reg.Close()
}

func (w *loopWorld) Trigger(t *rapid.T) {
	s := w.pick(t, false)
	err := w.l.Trigger(s.tok)
	w.logf("Trigger(%s) = %v", s.label, err)
	w.noCalls(t, "Trigger")
	if err != nil {
		w.fatalf(t, "Trigger: %v", err)
	}
	s.triggered = true
}

// Stale uses the token of a removed source, whose entry a later source may
// have taken: every operation refuses it and changes nothing.
func (w *loopWorld) Stale(t *rapid.T) {
	s := w.pick(t, true)
	op := rapid.SampledFrom([]string{"Rearm", "Disarm", "Remove", "Trigger"}).Draw(t, "operation")
	var err error
	switch op {
	case "Rearm":
		err = w.l.Rearm(s.tok)
	case "Disarm":
		err = w.l.Disarm(s.tok)
	case "Remove":
		err = w.l.Remove(s.tok)
	case "Trigger":
		err = w.l.Trigger(s.tok)
	}
	w.logf("%s(%s, removed) = %v", op, s.label, err)
	w.noCalls(t, op)
	if !errors.Is(err, eventloop.ErrUnknownToken) {
		w.fatalf(t, "%s with the token of removed %s: %v, want ErrUnknownToken", op, s.label, err)
	}
}

func (w *loopWorld) noCalls(t *rapid.T, op string) {
	if len(w.calls) > 0 {
		w.fatalf(t, "%s made handler calls: %v", op, w.calls)
	}
}

// pollReports is the poll contract for a Registration with Readable
// interest in mode opts: whether a Poll call reports it now, and its
// state after (rules 2-4).
func (s *loopSrc) pollReports() bool {
	if s.removed || !s.pollArmed || !s.ready {
		return false
	}
	if s.opts.IsEdge() && !s.owed {
		return false
	}
	s.owed = false
	if s.opts.IsOneshot() {
		s.pollArmed = false
	}
	return true
}

// Iterate is one RunOnce(0) and its check.
func (w *loopWorld) Iterate(t *rapid.T) {
	totals.polls.Add(1)
	for _, s := range w.live() {
		s.polled = false
		if s.requeued || s.triggered {
			s.pend = pendMust
		}
		s.requeued, s.triggered = false, false
		if s.pollReports() {
			s.polled = true
			s.pend = pendMust
		}
	}
	w.inIter = true
	err := w.l.RunOnce(0, nil)
	w.inIter = false
	calls := w.calls
	w.calls = nil
	var seen []string
	for _, c := range calls {
		if c.removed {
			seen = append(seen, "Removed "+c.s.label)
		} else {
			seen = append(seen, fmt.Sprintf("%s %s", c.s.label, c.ev.Ready))
		}
	}
	w.logf("RunOnce(0) = %v: %v", err, seen)
	if err != nil {
		w.fatalf(t, "RunOnce: %v", err)
	}
	totals.events.Add(int64(len(calls)))
	w.checkIteration(t, calls)
}

// checkIteration checks an iteration's calls against the pending calls
// and then applies their actions to the model.
func (w *loopWorld) checkIteration(t *rapid.T, calls []loopCall) {
	called := map[*loopSrc]bool{}
	var made []*loopSrc
	for i, c := range calls {
		s := c.s
		if c.removed {
			// Only after the call that returned Remove, at once.
			if i == 0 || calls[i-1].s != s || calls[i-1].removed || s.action != eventloop.Remove {
				w.fatalf(t, "Removed of %s not right after its call that returned Remove", s.label)
			}
			continue
		}
		switch {
		case s.removed:
			w.fatalf(t, "call of removed %s", s.label)
		case s.disarmed:
			w.fatalf(t, "call of disarmed %s", s.label)
		case called[s]:
			w.fatalf(t, "two calls of %s in one iteration", s.label)
		case s.pend == pendNone:
			w.fatalf(t, "call of %s, which has no pending call", s.label)
		case c.ev.Token != s.tok:
			w.fatalf(t, "call of %s with token %#x, want %#x", s.label, uint64(c.ev.Token), uint64(s.tok))
		case c.ev.Ready&^poll.Readable != 0:
			w.fatalf(t, "call of %s with readiness %s", s.label, c.ev.Ready)
		case s.polled && !c.ev.Ready.IsReadable():
			w.fatalf(t, "call of %s for a Poll event without Readable (%s)", s.label, c.ev.Ready)
		}
		if len(made) > 0 && made[len(made)-1].prio < s.prio {
			w.fatalf(t, "call of %s (priority %d) after %s (priority %d)", s.label, s.prio, made[len(made)-1].label, made[len(made)-1].prio)
		}
		called[s] = true
		made = append(made, s)
	}
	atCap := w.cap > 0 && len(made) == w.cap
	if w.cap > 0 && len(made) > w.cap {
		w.fatalf(t, "%d calls in one iteration, cap %d", len(made), w.cap)
	}
	lowest := 0
	if len(made) > 0 {
		lowest = made[len(made)-1].prio
	}
	for _, s := range w.live() {
		if called[s] || s.pend == pendNone {
			continue
		}
		enabled := !s.disarmed
		switch {
		case enabled && s.pend == pendMust && !atCap:
			w.fatalf(t, "%s had a call pending and was not called, below the cap", s.label)
		case enabled && s.pend == pendMust && s.prio > lowest:
			w.fatalf(t, "%s (priority %d) was left waiting behind a call of priority %d", s.label, s.prio, lowest)
		case enabled && (!atCap || s.prio > lowest):
			s.pend = pendNone // a possible call that would have been made: it was not queued
		case !enabled && (!atCap || s.prio > lowest):
			s.pend = pendNone // reached and dropped
		case !enabled && s.prio == lowest:
			s.pend = pendMaybe // dropped, or still behind the last call made
		}
	}
	for _, s := range made {
		s.pend = pendNone
		switch s.action {
		case eventloop.Rearm:
			if s.opts.IsOneshot() {
				s.reregistered()
			} else {
				s.requeued = true
			}
		case eventloop.Disarm:
			s.disarmed = true
			if !s.opts.IsOneshot() {
				s.pollArmed, s.owed = false, false
			}
		case eventloop.Remove:
			s.removed = true
			_ = s.reg.Close()
		}
	}
}

// close closes the Loop: every source left is removed, its Removed run
// once.
func (w *loopWorld) close(t *rapid.T) {
	err := w.l.Close()
	w.logf("Close() = %v", err)
	if err != nil {
		w.fatalf(t, "Close: %v", err)
	}
	for _, s := range w.live() {
		s.removed = true
		_ = s.reg.Close()
	}
	for _, c := range w.calls {
		if !c.removed {
			w.fatalf(t, "Close called Ready of %s", c.s.label)
		}
	}
	w.calls = nil
	w.Check(t)
}

// discard releases everything without checking (cleanup after a failure).
func (w *loopWorld) discard() {
	_ = w.l.Close()
	for _, s := range w.srcs {
		_ = s.reg.Close()
	}
}
