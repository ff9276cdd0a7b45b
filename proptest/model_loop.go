//go:build linux

package proptest

import (
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
// against the model. Conns share the Loop and its iterations; their model
// is in model_loop_conn.go.
//
// The sources are Registrations (their readiness is exactly known; the
// poll contract for descriptors has its own model in model_fd.go). For
// each iteration the model derives, from the poll contract, which sources
// the Poll reports (rule 3 for Level, rule 2 for Edge, rule 4 for Oneshot,
// rule 5 after a Reregister), adds those an Again action or a Trigger
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
//
// Conns count against the cap as every source does, but the model sees
// how many of their calls an iteration made (Stats.Calls), not which. At
// the cap with Conns called, the last call may have been a Conn's of a
// lower priority than the sources called: a disabled source no higher
// than the lowest of those is then a possible call too.

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
	requeued  bool // an Again action of an armed source: queued for the next iteration
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
	l       *eventloop.Loop
	cap     int // Config.MaxEventsPerIteration; 0 none
	srcs    []*loopSrc
	byTok   map[poll.Token]*loopSrc
	nextID  int
	inIter  bool        // RunOnce in progress: calls are expected
	closing bool        // Close in progress: Conns are closed
	conns   []*loopConn // model_loop_conn.go
	calls   []loopCall  // what the handlers saw, in order, since the last check
	stray   []string    // calls outside RunOnce, Close or Remove
	hist    []string
	log     func(format string, args ...any)
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
	for _, lc := range w.conns {
		fmt.Fprintf(&b, "\n    %v", lc)
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
		"":         w.Check,
		"Add":      w.Add,
		"Set":      w.Set,
		"Unset":    w.Unset,
		"Action":   w.Action,
		"Rearm":    w.Rearm,
		"Disarm":   w.Disarm,
		"SetMode":  w.SetMode,
		"Remove":   w.Remove,
		"Trigger":  w.Trigger,
		"Stale":    w.Stale,
		"Iterate":  w.Iterate,
		"ConnAdd":  w.ConnAdd,
		"ConnOp":   w.ConnOp,
		"ConnPeer": w.ConnPeer,
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
	w.checkConns(t)
}

// close closes the Loop: every source left is removed, its Removed run
// once.
func (w *loopWorld) close(t *rapid.T) {
	w.closing = true
	err := w.l.Close()
	w.closing = false
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
	w.closeConns(t)
	w.Check(t)
	for _, lc := range w.conns {
		_ = lc.peer.Close()
	}
}

// discard releases everything without checking (cleanup after a failure).
func (w *loopWorld) discard() {
	_ = w.l.Close()
	for _, s := range w.srcs {
		_ = s.reg.Close()
	}
	for _, lc := range w.conns {
		_ = lc.peer.Close()
	}
}
