//go:build linux

package proptest

import (
	"fmt"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/poll"
)

// One iteration of the Loop's state machine: the pending calls the poll
// contract and the model's queue predict, one RunOnce(0), and the check of
// its calls against them (the MUST and MUST NOT of model_loop.go).

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
	before := w.connStates()
	callsBefore := w.l.Stats().Calls
	w.inIter = true
	err := w.l.RunOnce(0, nil)
	w.inIter = false
	handlerCalls := int(w.l.Stats().Calls - callsBefore) // the sources' and the Conns'

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
	if len(w.stray) > 0 {
		w.fatalf(t, "unexpected handler calls: %v", w.stray)
	}
	atCap, lowest, anyMade := w.checkIteration(t, calls, handlerCalls)
	// At the cap, the run queue stopped after the last call made, of the
	// lowest priority made: a Conn of a higher priority than a source
	// called was reached; of the others it is not known.
	w.checkConnIteration(t, before, func(prio int) bool { return !atCap || anyMade && prio > lowest })
}

// checkIteration checks an iteration's calls against the pending calls
// and then applies their actions to the model. handlerCalls is how many
// calls the Loop counted, the Conns' among them: each counts against the
// cap, though the model does not see which Conns they were for. It
// reports whether the calls reached the cap, and whether a source was
// called and the lowest priority of those called (a Conn called after it
// may have had a lower one).
func (w *loopWorld) checkIteration(t *rapid.T, calls []loopCall, handlerCalls int) (atCap bool, lowest int, anyMade bool) {
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
	connCalls := handlerCalls - len(made)
	if connCalls < 0 || len(w.conns) == 0 && connCalls != 0 {
		w.fatalf(t, "the Loop counted %d calls, the sources saw %d", handlerCalls, len(made))
	}
	atCap = w.cap > 0 && handlerCalls == w.cap
	if w.cap > 0 && handlerCalls > w.cap {
		w.fatalf(t, "%d calls in one iteration (%d of Conns), cap %d", handlerCalls, connCalls, w.cap)
	}
	anyMade = len(made) > 0
	if anyMade {
		lowest = made[len(made)-1].prio
	}
	// Whether the last call made is known to be of priority lowest: with
	// Conns called it may have been a Conn's, of a lower one.
	exact := connCalls == 0
	for _, s := range w.live() {
		if called[s] || s.pend == pendNone {
			continue
		}
		enabled := !s.disarmed
		passed := !atCap || anyMade && s.prio > lowest // the run queue got past its priority
		switch {
		case enabled && s.pend == pendMust && !atCap:
			w.fatalf(t, "%s had a call pending and was not called, below the cap", s.label)
		case enabled && s.pend == pendMust && passed:
			w.fatalf(t, "%s (priority %d) was left waiting behind a call of priority %d", s.label, s.prio, lowest)
		case passed:
			// Enabled: a possible call that would have been made was not
			// queued. Disabled: reached and dropped.
			s.pend = pendNone
		case !enabled && (s.prio == lowest || !exact):
			s.pend = pendMaybe // dropped, or still behind the last call made
		}
	}
	for _, s := range made {
		s.pend = pendNone
		switch s.action {
		case eventloop.Again:
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
	return atCap, lowest, anyMade
}
