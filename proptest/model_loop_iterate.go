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
	if len(w.stray) > 0 {
		w.fatalf(t, "unexpected handler calls: %v", w.stray)
	}
	atCap, lowest := w.checkIteration(t, calls)
	// At the cap, the run queue stopped after the last call made, of the
	// lowest priority made: a Conn of a higher one was reached, one of a
	// lower one was not, one of the same is not known.
	w.checkConnIteration(t, before, func(prio int) bool { return !atCap || prio > lowest })
}

// checkIteration checks an iteration's calls against the pending calls
// and then applies their actions to the model. It reports whether the
// calls reached the cap, and the lowest priority called.
func (w *loopWorld) checkIteration(t *rapid.T, calls []loopCall) (atCap bool, lowest int) {
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
	atCap = w.cap > 0 && len(made) == w.cap
	if w.cap > 0 && len(made) > w.cap {
		w.fatalf(t, "%d calls in one iteration, cap %d", len(made), w.cap)
	}
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
	return atCap, lowest
}
