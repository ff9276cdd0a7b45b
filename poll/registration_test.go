package poll

// Contract tests for Registration and SetReadiness (user-space readiness):
// rules 1-8 of the contract (ARCHITECTURE.md) for each trigger mode. The
// error values of every Registration operation are in
// registration_errors_test.go, Reregister racing with SetReadiness in
// registration_race_test.go.
//
// User-space readiness is synchronous: in a single goroutine, once
// SetReadiness (or Register, Reregister, Deregister, Close) has returned,
// the very next Poll call sees its effect. So "nothing is reported" is
// asserted with one Poll call with a short timeout, and "it is reported"
// with one Poll call that must return the event, without retry loops.

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRegistrationContract(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		for _, m := range modes {
			t.Run(m.name, func(t *testing.T) {
				edge, oneshot := m.opts.IsEdge(), m.opts.IsOneshot()
				level := !edge && !oneshot

				// Rule 1: several SetReadiness between two Poll calls, of
				// different kinds, give one event with the union.
				t.Run("Rule1OneEventPerCall", func(t *testing.T) {
					p := newPoll(t)
					ev := NewEvents(16)
					_, s := newRegistered(t, p, 1, Readable|Writable, m.opts)
					for range 3 {
						require.NoError(t, s.SetReadiness(Readable))
						require.NoError(t, s.SetReadiness(Writable))
					}
					requireOnly(t, p, ev, 1, Readable|Writable)
					if level {
						requireOnly(t, p, ev, 1, Readable|Writable)
					} else {
						requireNoEvents(t, p, ev)
					}
				})

				// Rule 2: edge. Every SetReadiness that sets an interest bit
				// while the registration is not queued is a new edge, even if
				// the bit was already set; between edges, nothing.
				if edge && !oneshot {
					t.Run("Rule2Edge", func(t *testing.T) {
						p := newPoll(t)
						ev := NewEvents(16)
						_, s := newRegistered(t, p, 7, Readable, m.opts)
						requireNoEvents(t, p, ev)
						require.NoError(t, s.SetReadiness(Readable))
						requireOnly(t, p, ev, 7, Readable)
						// Still ready, but no new edge: nothing, however often.
						requireNoEvents(t, p, ev)
						requireNoEvents(t, p, ev)
						require.Equal(t, Readable, s.Readiness())
						// Setting the bit again is a new edge.
						require.NoError(t, s.SetReadiness(Readable))
						requireOnly(t, p, ev, 7, Readable)
						requireNoEvents(t, p, ev)
						// Unset and set: an edge.
						require.NoError(t, s.UnsetReadiness(Readable))
						requireNoEvents(t, p, ev)
						// Readiness outside the interest is no edge.
						require.NoError(t, s.SetReadiness(Writable))
						requireNoEvents(t, p, ev)
						require.NoError(t, s.SetReadiness(Readable))
						requireOnly(t, p, ev, 7, Readable)
						requireNoEvents(t, p, ev)
					})
				}

				// Rule 3: level. Reported on every call while ready, never
				// after UnsetReadiness.
				if level {
					t.Run("Rule3Level", func(t *testing.T) {
						p := newPoll(t)
						ev := NewEvents(16)
						_, s := newRegistered(t, p, 3, Readable|Writable, m.opts)
						require.NoError(t, s.SetReadiness(Readable))
						for range 5 {
							requireOnly(t, p, ev, 3, Readable)
						}
						require.NoError(t, s.SetReadiness(Writable))
						requireOnly(t, p, ev, 3, Readable|Writable)
						require.NoError(t, s.UnsetReadiness(Readable))
						requireOnly(t, p, ev, 3, Writable)
						require.NoError(t, s.UnsetReadiness(Writable))
						requireNoEvents(t, p, ev)
						requireNoEvents(t, p, ev)
						require.NoError(t, s.SetReadiness(Readable))
						requireOnly(t, p, ev, 3, Readable)
						requireOnly(t, p, ev, 3, Readable)
						// Unset between two calls of a level registration
						// that is queued: not reported.
						require.NoError(t, s.UnsetReadiness(Readable))
						requireNoEvents(t, p, ev)
					})
				}

				// Rule 4: oneshot. One event, then nothing whatever is set,
				// until Reregister re-arms.
				if oneshot {
					t.Run("Rule4Oneshot", func(t *testing.T) {
						p := newPoll(t)
						ev := NewEvents(16)
						r, s := newRegistered(t, p, 4, Readable|Writable, m.opts)
						require.NoError(t, s.SetReadiness(Readable))
						requireOnly(t, p, ev, 4, Readable)
						requireNoEvents(t, p, ev)
						require.NoError(t, s.SetReadiness(Readable))
						require.NoError(t, s.SetReadiness(Writable))
						requireNoEvents(t, p, ev)
						require.NoError(t, s.UnsetReadiness(Readable|Writable))
						require.NoError(t, s.SetReadiness(Readable))
						requireNoEvents(t, p, ev)
						// Reregister while ready re-arms and reports.
						require.NoError(t, p.Reregister(r, 4, Readable|Writable, m.opts))
						requireOnly(t, p, ev, 4, Readable)
						requireNoEvents(t, p, ev)
						require.NoError(t, s.SetReadiness(Writable))
						requireNoEvents(t, p, ev)
						// Reregister while not ready: nothing until SetReadiness.
						require.NoError(t, s.UnsetReadiness(Readable|Writable))
						require.NoError(t, p.Reregister(r, 5, Readable|Writable, m.opts))
						requireNoEvents(t, p, ev)
						require.NoError(t, s.SetReadiness(Writable))
						requireOnly(t, p, ev, 5, Writable)
						requireNoEvents(t, p, ev)
					})
				}

				// Rule 5: readiness set before Register is reported after it;
				// Reregister while ready reports.
				t.Run("Rule5ReadyBeforeRegister", func(t *testing.T) {
					p := newPoll(t)
					ev := NewEvents(16)
					r, s := newUnregistered(t)
					require.NoError(t, s.SetReadiness(Readable))
					require.NoError(t, s.SetReadiness(Writable))
					requireNoEvents(t, p, ev)
					require.NoError(t, p.Register(r, 5, Readable, m.opts))
					requireOnly(t, p, ev, 5, Readable)
					if level {
						requireOnly(t, p, ev, 5, Readable)
					} else {
						requireNoEvents(t, p, ev)
					}
					// Reregister while ready: reported at once, with the new
					// token and interest.
					require.NoError(t, p.Reregister(r, 6, Readable|Writable, m.opts))
					requireOnly(t, p, ev, 6, Readable|Writable)
					if level {
						requireOnly(t, p, ev, 6, Readable|Writable)
					} else {
						requireNoEvents(t, p, ev)
					}
					// And again with the same arguments.
					require.NoError(t, p.Reregister(r, 6, Readable|Writable, m.opts))
					requireOnly(t, p, ev, 6, Readable|Writable)
				})

				// Rule 6: readiness outside the interest is never reported;
				// Reregister that removes the interest discards a pending
				// notification.
				t.Run("Rule6Interest", func(t *testing.T) {
					p := newPoll(t)
					ev := NewEvents(16)
					r, s := newRegistered(t, p, 6, Readable, m.opts)
					require.NoError(t, s.SetReadiness(Writable|Hup|Priority|Error))
					requireNoEvents(t, p, ev)
					requireNoEvents(t, p, ev)
					// Only the interest part of the readiness is reported.
					require.NoError(t, s.SetReadiness(Readable))
					requireOnly(t, p, ev, 6, Readable)
					require.NoError(t, s.UnsetReadiness(allReady))

					// A pending (queued, not yet reported) notification for
					// Readable is discarded when Readable leaves the interest.
					require.NoError(t, p.Reregister(r, 6, Readable, m.opts))
					require.NoError(t, s.SetReadiness(Readable))
					require.NoError(t, p.Reregister(r, 6, Writable, m.opts))
					requireNoEvents(t, p, ev)
					requireNoEvents(t, p, ev)
					// Writable arrives: only Writable is reported, never the
					// Readable that is still set.
					require.NoError(t, s.SetReadiness(Writable))
					requireOnly(t, p, ev, 6, Writable)
					if level {
						requireOnly(t, p, ev, 6, Writable)
					} else {
						requireNoEvents(t, p, ev)
					}
					// Giving Readable back to the interest reports it (rule 5).
					require.NoError(t, s.UnsetReadiness(Writable))
					require.NoError(t, p.Reregister(r, 6, Readable|Writable, m.opts))
					requireOnly(t, p, ev, 6, Readable)
				})

				// Rule 7: Deregister and Close discard pending notifications,
				// and the token is never reported again.
				t.Run("Rule7Deregister", func(t *testing.T) {
					p := newPoll(t)
					ev := NewEvents(16)
					r, s := newRegistered(t, p, 70, Readable, m.opts)
					require.NoError(t, s.SetReadiness(Readable))
					require.NoError(t, p.Deregister(r))
					requireNoEvents(t, p, ev)
					require.NoError(t, s.SetReadiness(Readable))
					require.NoError(t, s.SetReadiness(Writable))
					requireNoEvents(t, p, ev)
					// Registering again: the readiness was kept (rule 5).
					require.NoError(t, p.Register(r, 71, Readable, m.opts))
					requireOnly(t, p, ev, 71, Readable)
					// Deregister after a report (a level node is still
					// queued then): nothing more.
					require.NoError(t, p.Deregister(r))
					requireNoEvents(t, p, ev)
					requireNoEvents(t, p, ev)
				})

				t.Run("Rule7Close", func(t *testing.T) {
					p := newPoll(t)
					ev := NewEvents(16)
					// Closed while a notification is pending.
					r1, s1 := newRegistered(t, p, 71, Readable, m.opts)
					require.NoError(t, s1.SetReadiness(Readable))
					require.NoError(t, r1.Close())
					// Closed after a report (a level node stays queued).
					r2, s2 := newRegistered(t, p, 72, Readable, m.opts)
					require.NoError(t, s2.SetReadiness(Readable))
					requireOnly(t, p, ev, 72, Readable)
					require.NoError(t, r2.Close())
					requireNoEvents(t, p, ev)

					for _, c := range []struct {
						r *Registration
						s *SetReadiness
					}{{r1, s1}, {r2, s2}} {
						r, s := c.r, c.s
						require.ErrorIs(t, s.SetReadiness(Readable), ErrClosed)
						require.ErrorIs(t, s.SetReadiness(Writable), ErrClosed)
						require.ErrorIs(t, s.UnsetReadiness(Readable), ErrClosed)
						require.ErrorIs(t, s.DelayReadiness(Readable, time.Millisecond), ErrClosed)
						require.ErrorIs(t, r.Close(), ErrClosed)
						require.ErrorIs(t, p.Register(r, 73, Readable, m.opts), ErrClosed)
						require.ErrorIs(t, p.Reregister(r, 73, Readable, m.opts), ErrClosed)
						require.ErrorIs(t, p.Deregister(r), ErrClosed)
					}
					requireNoEvents(t, p, ev)
					requireNoEvents(t, p, ev)
					// The Poll itself is unharmed.
					_, s3 := newRegistered(t, p, 74, Readable, m.opts)
					require.NoError(t, s3.SetReadiness(Readable))
					requireOnly(t, p, ev, 74, Readable)
				})

				// Rule 8: SetReadiness from another goroutine wakes a Poll
				// blocked with a negative timeout: first with the Poll known
				// to be asleep, then at arbitrary moments.
				t.Run("Rule8WakesBlockedPoll", func(t *testing.T) {
					p := newPoll(t)
					ev := NewEvents(16)
					r, s := newRegistered(t, p, 8, Readable, m.opts)
					rearm := func(i int) {
						require.NoError(t, s.UnsetReadiness(Readable))
						if oneshot {
							require.NoError(t, p.Reregister(r, 8, Readable, m.opts))
						}
						// User-space readiness is synchronous: a zero
						// timeout is enough to see that nothing is left.
						require.Empty(t, pollEvents(t, p, ev, 0), "iteration %d", i)
					}
					for i := range 10 {
						ch := pollAsync(p, ev, -1)
						waitAsleep(t, p)
						done := make(chan error, 1)
						go func() { done <- s.SetReadiness(Readable) }()
						res := awaitPoll(t, p, ch, fmt.Sprintf("asleep, iteration %d", i))
						require.NoError(t, <-done)
						require.NoError(t, res.err)
						require.Equal(t, []Event{{8, Readable}}, res.evs)
						rearm(i)
					}
					for i := range 300 {
						ch := pollAsync(p, ev, -1)
						done := make(chan error, 1)
						go func() { done <- s.SetReadiness(Readable) }()
						res := awaitPoll(t, p, ch, fmt.Sprintf("any moment, iteration %d", i))
						require.NoError(t, <-done)
						require.NoError(t, res.err)
						require.Equal(t, []Event{{8, Readable}}, res.evs)
						rearm(i)
					}
				})
			})
		}
	})
}

// TestRegistrationEdgeOutsideInterest: in edge mode, a SetReadiness that sets
// only bits outside the interest is not an edge (rule 2: a notification each
// time the source becomes ready for an interest; registration.go: "each call
// that sets a bit of the interest is a new edge"), also while an interest
// bit is still set from an edge already reported. Rule 9 would tolerate a
// spurious event here, but a Registration has no kernel to blame: the only
// readiness it knows is what SetReadiness told it.
func TestRegistrationEdgeOutsideInterest(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		p := newPoll(t)
		ev := NewEvents(4)
		_, s := newRegistered(t, p, 9, Readable, Edge)
		require.NoError(t, s.SetReadiness(Readable))
		requireOnly(t, p, ev, 9, Readable)
		require.NoError(t, s.SetReadiness(Writable))
		require.NoError(t, s.SetReadiness(Hup|Priority))
		require.Empty(t, pollEvents(t, p, ev, 0), "SetReadiness outside the interest made an edge")
		// An interest bit is an edge again.
		require.NoError(t, s.SetReadiness(Readable|Writable))
		requireOnly(t, p, ev, 9, Readable)
	})
}
