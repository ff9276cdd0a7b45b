//go:build linux

package proptest

// The checks of the crowd (model_crowd.go) against the model: after each
// Poll call, and at the end of a case.

import (
	"fmt"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
)

// check compares every member's Readiness with the model.
func (c *crowd) check(t *rapid.T, w *world) {
	if c == nil {
		return
	}
	for i, m := range c.m {
		if got := m.sr.Readiness(); got != m.rd {
			w.fatalf(t, "crowd member %d: Readiness() = %s, but the model has %s", i, got, m.rd)
		}
	}
}

// checkCall checks the crowd's part of one Poll call and advances its
// model; drained and bound are the call's, as for sources.
func (c *crowd) checkCall(t *rapid.T, w *world, call *pollCall, drained bool, bound int) {
	if c == nil {
		return
	}
	for i, m := range c.m {
		tok := crowdBase + poll.Token(i)
		before, after := m.rd, m.rd|m.inflight
		level := m.opts.IsLevel()
		armed := m.armed && !m.closed
		sure := before & m.interest
		maybe := after & m.interest
		fired := m.inflight & m.interest // set by a burst during the call
		must := armed && sure != 0 && (level || m.owed)
		may := armed && maybe != 0 && (level || m.owed || m.mayFire || fired != 0)
		r, reported := call.got[tok]
		if reported {
			label := fmt.Sprintf("crowd member %d (token %d, %s, %s)", i, tok, m.interest, m.opts)
			switch {
			case m.closed:
				w.fatalf(t, "Poll#%d reported %s with %s after it was closed (rule 7)", call.idx, label, r)
			case !m.armed:
				w.fatalf(t, "Poll#%d reported %s with %s again although it is oneshot and was not reregistered since its event (rule 4)", call.idx, label, r)
			case r == 0:
				w.fatalf(t, "Poll#%d reported %s with empty readiness", call.idx, label)
			case r&^m.interest != 0:
				w.fatalf(t, "Poll#%d reported %s with %s, outside its interest (rule 6)", call.idx, label, r)
			case r&^maybe != 0:
				w.fatalf(t, "Poll#%d reported %s with %s, but only %s can be ready (stale or invented readiness)", call.idx, label, r, maybe)
			case sure&^r != 0:
				w.fatalf(t, "Poll#%d reported %s with %s, missing %s which is ready (incomplete event)", call.idx, label, r, sure&^r)
			case !may:
				w.fatalf(t, "Poll#%d reported %s with %s, but nothing new arrived since its last event (rule 2: one notification per edge)", call.idx, label, r)
			}
			if !must {
				totals.spurious.Add(1)
			}
			m.missed.reset()
			switch {
			case m.opts.IsOneshot():
				m.armed, m.owed, m.mayFire = false, false, false
			case level:
				m.owed, m.mayFire = false, false
			case fired&^r != 0:
				// The event lacks bits the burst set: they came after it,
				// a new edge.
				m.owed, m.mayFire = true, false
			default:
				// The burst's bits are in the event: it came before, unless
				// they were set already, which cannot be told.
				m.owed, m.mayFire = false, fired != 0 && fired&^before == 0
			}
		} else {
			if must {
				if drained {
					w.fatalf(t, "Poll#%d did not report crowd member %d (token %d, %s, %s, ready %s) although it had room (%d of %d): a lost event (rules %s)",
						call.idx, i, tok, m.interest, m.opts, sure, len(call.order), call.capacity, crowdRules(m))
				}
				totals.carried.Add(1)
				if m.missed.miss(bound) {
					w.fatalf(t, "crowd member %d (token %d, %s, %s, ready %s) was not reported by %d consecutive Poll calls that were full: starved (rules 8, 11)",
						i, tok, m.interest, m.opts, sure, m.missed.calls)
				}
			} else {
				m.missed.reset()
			}
			if armed && fired != 0 {
				m.owed = true // set during the call, before or after its end
			}
			if drained && fired == 0 {
				m.mayFire = false
				if m.owed && sure == 0 {
					m.owed = false // for readiness that is gone (rule 6)
				}
			}
		}
		m.rd, m.inflight = after, 0
	}
}

func crowdRules(m *crowdMember) string {
	switch {
	case m.opts.IsOneshot():
		return "4, 5, 8"
	case m.opts.IsLevel():
		return "3, 8"
	default:
		return "2, 8"
	}
}

// settle ends a check of the crowd: calls with room for all of it, which
// must report every member owed an event, then Close of every member
// still open, after which none may be reported (the world's own settle
// follows).
func (c *crowd) settle(t *rapid.T, w *world) {
	if c == nil || c.live == 0 {
		return
	}
	for i := 0; i < 2; i++ {
		w.poll(t, len(c.m)+16, 0)
	}
	for i := range c.m {
		if !c.m[i].closed {
			c.close(t, w, i)
		}
	}
	w.logf("crowd closed")
}
