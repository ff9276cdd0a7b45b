//go:build linux

package proptest

import (
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
)

// The oracle: one real Poll call, checked against the model (the MUST, MAY
// and MUST NOT of model.go's header) and the model advanced by what it
// reported, plus settle, which polls at the end of a check until nothing
// is owed.

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
			s.missed.reset()
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
			totals.carried.Add(1)
			if s.missed.miss(bound) {
				w.fatalf(t, "%s (token %d, %s, %s, ready %s) was not reported by %d consecutive Poll calls that were full: starved (rules 8, 11)",
					s.label, s.token, s.interest, s.opts, sure|fired, s.missed.calls)
			}
			if !level {
				s.owed = true
			}
		} else {
			s.missed.reset()
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
