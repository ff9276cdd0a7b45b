package poll

// Contract tests for Registration and SetReadiness (user-space readiness):
// rules 1-8 of the contract (ARCHITECTURE.md) for each trigger mode, the error values of every
// Registration operation, and Reregister racing with SetReadiness.
//
// User-space readiness is synchronous: in a single goroutine, once
// SetReadiness (or Register, Reregister, Deregister, Close) has returned,
// the very next Poll call sees its effect. So "nothing is reported" is
// asserted with one Poll call with a short timeout, and "it is reported"
// with one Poll call that must return the event, without retry loops.

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/testsupport"
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

// TestRegistrationErrors checks every error a Registration operation
// returns, matched with errors.Is.
func TestRegistrationErrors(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		t.Run("RegisteredElsewhere", func(t *testing.T) {
			p1, p2 := newPoll(t), newPoll(t)
			r, s := newRegistered(t, p1, 1, Readable, Edge)
			require.ErrorIs(t, p2.Register(r, 1, Readable, Edge), ErrRegisteredElsewhere)
			require.ErrorIs(t, p2.Reregister(r, 1, Readable, Edge), ErrRegisteredElsewhere)
			require.ErrorIs(t, p2.Deregister(r), ErrRegisteredElsewhere)
			// Still bound to p1 after Deregister.
			require.NoError(t, p1.Deregister(r))
			require.ErrorIs(t, p2.Register(r, 1, Readable, Edge), ErrRegisteredElsewhere)
			// The failed attempts did not disturb p1 or p2.
			require.NoError(t, p1.Register(r, 2, Readable, Edge))
			require.NoError(t, s.SetReadiness(Readable))
			ev := NewEvents(4)
			requireNoEvents(t, p2, ev)
			requireOnly(t, p1, ev, 2, Readable)
		})
		t.Run("AlreadyRegistered", func(t *testing.T) {
			p := newPoll(t)
			r, s := newRegistered(t, p, 1, Readable, Level)
			require.ErrorIs(t, p.Register(r, 2, Writable, Edge), ErrAlreadyRegistered)
			// The failed Register changed nothing: token 1, Readable, Level.
			require.NoError(t, s.SetReadiness(Readable|Writable))
			ev := NewEvents(4)
			requireOnly(t, p, ev, 1, Readable)
			requireOnly(t, p, ev, 1, Readable)
		})
		t.Run("NotRegistered", func(t *testing.T) {
			p := newPoll(t)
			r, s := newUnregistered(t)
			require.ErrorIs(t, p.Deregister(r), ErrNotRegistered)
			require.ErrorIs(t, p.Reregister(r, 1, Readable, Edge), ErrNotRegistered)
			require.ErrorIs(t, s.DelayReadiness(Readable, time.Millisecond), ErrNotRegistered)
			require.NoError(t, p.Register(r, 1, Readable, Edge))
			require.NoError(t, p.Deregister(r))
			require.ErrorIs(t, p.Deregister(r), ErrNotRegistered)
			require.ErrorIs(t, p.Reregister(r, 1, Readable, Edge), ErrNotRegistered)
		})
		t.Run("InvalidArguments", func(t *testing.T) {
			p := newPoll(t)
			r, s := newUnregistered(t)
			bad := Ready(1 << 12)
			require.ErrorIs(t, p.Register(r, 1, bad, Edge), ErrInvalidInterest)
			require.ErrorIs(t, p.Register(r, 1, Readable, Edge|Level), ErrInvalidOpts)
			require.ErrorIs(t, p.Register(r, 1, Readable, PollOpt(1<<6)), ErrInvalidOpts)
			require.ErrorIs(t, p.Register(r, ReservedToken, Readable, Edge), ErrReservedToken)
			require.ErrorIs(t, p.Register(nil, 1, Readable, Edge), ErrInvalidArgument)
			// Calling the Evented methods directly validates too.
			require.ErrorIs(t, r.Register(p, 1, bad, Edge), ErrInvalidInterest)
			require.ErrorIs(t, s.SetReadiness(bad), ErrInvalidArgument)
			require.ErrorIs(t, s.SetReadiness(Readable|bad), ErrInvalidArgument)
			require.ErrorIs(t, s.UnsetReadiness(bad), ErrInvalidArgument)
			require.ErrorIs(t, s.DelayReadiness(bad, time.Millisecond), ErrInvalidArgument)
			require.Equal(t, Ready(0), s.Readiness(), "a refused SetReadiness must not set anything")
			// None of the refused calls bound r to p.
			p2 := newPoll(t)
			require.NoError(t, p2.Register(r, 1, Readable, Edge))
			require.ErrorIs(t, s.DelayReadiness(Readable, -time.Millisecond), ErrInvalidArgument)
			require.ErrorIs(t, p2.Reregister(r, 1, bad, Edge), ErrInvalidInterest)
			require.ErrorIs(t, p2.Reregister(r, ReservedToken, Readable, Edge), ErrReservedToken)
			_, err := p2.Poll(nil, 0)
			require.ErrorIs(t, err, ErrInvalidArgument)
			// The refused Reregister changed nothing.
			require.NoError(t, s.SetReadiness(Readable))
			requireOnly(t, p2, NewEvents(4), 1, Readable)
		})
		t.Run("AfterPollClose", func(t *testing.T) {
			p := newPoll(t)
			ev := NewEvents(4)
			// One registration that is not queued when the Poll closes,
			// one that is (an always-ready level one, queued after its
			// report), one bound but deregistered.
			rIdle, sIdle := newRegistered(t, p, 1, Readable, Edge)
			rQueued, sQueued := newRegistered(t, p, 2, Readable, Level)
			rDereg, sDereg := newRegistered(t, p, 3, Readable, Edge)
			require.NoError(t, sQueued.SetReadiness(Readable))
			requireOnly(t, p, ev, 2, Readable)
			require.NoError(t, p.Deregister(rDereg))
			rNew, sNew := newUnregistered(t)

			require.NoError(t, p.Close())
			require.ErrorIs(t, p.Close(), ErrClosed)
			_, err := p.Poll(ev, 0)
			require.ErrorIs(t, err, ErrClosed)
			_, err = p.Poll(ev, -1)
			require.ErrorIs(t, err, ErrClosed)

			for i, c := range []struct {
				r *Registration
				s *SetReadiness
			}{{rIdle, sIdle}, {rQueued, sQueued}, {rDereg, sDereg}} {
				require.ErrorIs(t, c.s.SetReadiness(Readable), ErrClosed, "registration %d: SetReadiness after Poll.Close", i)
				require.ErrorIs(t, c.s.SetReadiness(Writable), ErrClosed, "registration %d: SetReadiness after Poll.Close", i)
				require.ErrorIs(t, c.s.DelayReadiness(Readable, time.Millisecond), ErrClosed, "registration %d: DelayReadiness after Poll.Close", i)
				require.ErrorIs(t, p.Reregister(c.r, 9, Readable, Edge), ErrClosed, "registration %d: Reregister after Poll.Close", i)
				require.ErrorIs(t, p.Deregister(c.r), ErrClosed, "registration %d: Deregister after Poll.Close", i)
				require.ErrorIs(t, p.Register(c.r, 9, Readable, Edge), ErrClosed, "registration %d: Register after Poll.Close", i)
			}
			require.ErrorIs(t, p.Register(rNew, 4, Readable, Edge), ErrClosed)
			// A Registration never registered can still be used elsewhere:
			// the refused Register did not bind it.
			p2 := newPoll(t)
			require.NoError(t, p2.Register(rNew, 4, Readable, Edge))
			require.NoError(t, sNew.SetReadiness(Readable))
			requireOnly(t, p2, ev, 4, Readable)
		})
	})
}

// TestRegistrationReregisterRace reregisters a Registration with ever larger
// tokens while other goroutines keep setting and clearing its readiness.
//
// In the first part the polling goroutine itself reregisters: every event
// of the Poll call that follows must carry the token just installed. In the
// second part another goroutine reregisters concurrently with Poll: an
// event must carry a token at least as large as the last one whose
// Reregister returned before the Poll call started, and no larger than the
// last one whose Reregister had begun when the Poll call returned. A token
// that was never registered (0, or one that does not exist yet) is a failure.
func TestRegistrationReregisterRace(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		for _, m := range modes {
			t.Run(m.name, func(t *testing.T) {
				p := newPoll(t)
				r, s := newRegistered(t, p, 1, Readable|Writable, m.opts)

				stop := make(chan struct{})
				var wg sync.WaitGroup
				var errs atomic.Value
				var ops atomic.Int64 // producer calls made: proof that they ran
				for g := range 3 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						kinds := []Ready{Readable, Writable, Readable | Writable}
						for i := 0; ; i++ {
							select {
							case <-stop:
								return
							default:
							}
							k := kinds[(i+g)%3]
							var err error
							if i%4 == 3 {
								err = s.UnsetReadiness(k)
							} else {
								err = s.SetReadiness(k)
							}
							if err != nil {
								errs.Store(err)
								return
							}
							ops.Add(1)
						}
					}()
				}
				defer func() {
					close(stop)
					wg.Wait()
					if err, ok := errs.Load().(error); ok {
						t.Errorf("producer: %v", err)
					}
				}()
				// On a busy 2-core machine the producers may not have run
				// at all yet: the race needs them running.
				testsupport.WaitFor(t, "the producers to run", func() bool { return ops.Load() >= 100 })

				// A round is a Reregister and a Poll; keep going past 1000
				// rounds until events have been seen, for as long as the
				// producers need to get scheduled between rounds.
				ev := NewEvents(8)
				tok := Token(1)
				seen := 0
				deadline := time.Now().Add(eventWait)
				for round := 0; round < 1000 || seen < 20 && time.Now().Before(deadline); round++ {
					tok++
					require.NoError(t, p.Reregister(r, tok, Readable|Writable, m.opts))
					evs := pollEvents(t, p, ev, 0)
					for _, e := range evs {
						require.Equal(t, tok, e.Token, "event from a Poll call started after Reregister(%d) returned", tok)
						require.NotZero(t, e.Ready)
						require.Zero(t, e.Ready&^(Readable|Writable))
					}
					seen += len(evs)
				}
				require.NotZero(t, seen, "no event in %v while the producers made %d calls", eventWait, ops.Load())

				// Concurrent Reregister.
				var begun, returned atomic.Uint64
				begun.Store(uint64(tok))
				returned.Store(uint64(tok))
				rereg := make(chan error, 1)
				const rounds = 5000
				last := uint64(tok) + rounds
				go func() {
					for k := uint64(tok) + 1; k <= last; k++ {
						begun.Store(k)
						if err := p.Reregister(r, Token(k), Readable|Writable, m.opts); err != nil {
							rereg <- err
							return
						}
						returned.Store(k)
					}
					rereg <- nil
				}()
				seen = 0
				deadline = time.Now().Add(eventWait)
				for done := false; !done || seen == 0 && time.Now().Before(deadline); {
					select {
					case err := <-rereg:
						require.NoError(t, err)
						done = true
					default:
					}
					lo := returned.Load()
					evs := pollEvents(t, p, ev, time.Millisecond)
					hi := begun.Load()
					for _, e := range evs {
						require.True(t, uint64(e.Token) >= lo && uint64(e.Token) <= hi,
							"event token %d; Reregister(%d) had returned before the Poll call and Reregister(%d) is the last begun", e.Token, lo, hi)
					}
					seen += len(evs)
				}
				require.NotZero(t, seen, "no event in %v while the producers made %d calls", eventWait, ops.Load())
			})
		}
	})
}

// TestRegistrationReregisterInterestRace checks that a token and an interest
// reported together belong to the same Reregister: a Registration is ready
// for Readable|Writable at all times, and is reregistered from another
// goroutine alternately with odd tokens for Readable and even tokens for
// Writable. Every event's readiness must be the interest of the token it
// carries (rule 6: readiness outside the interest is never reported).
func TestRegistrationReregisterInterestRace(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		for _, m := range modes {
			t.Run(m.name, func(t *testing.T) {
				p := newPoll(t)
				r, s := newRegistered(t, p, 1, Readable, m.opts)
				interestOf := func(tok Token) Ready {
					if tok%2 == 1 {
						return Readable
					}
					return Writable
				}
				const last = 6000
				rereg := make(chan error, 1)
				go func() {
					for k := Token(2); k <= last; k++ {
						// Each Reregister makes an edge (rule 5) and re-arms
						// oneshot; the readiness itself never changes.
						if err := p.Reregister(r, k, interestOf(k), m.opts); err != nil {
							rereg <- err
							return
						}
					}
					rereg <- nil
				}()
				require.NoError(t, s.SetReadiness(Readable|Writable))
				ev := NewEvents(8)
				seen := 0
				for done := false; !done; {
					select {
					case err := <-rereg:
						require.NoError(t, err)
						done = true
					default:
					}
					for _, e := range pollEvents(t, p, ev, time.Millisecond) {
						require.Equal(t, interestOf(e.Token), e.Ready,
							"token %d was registered for %s only", e.Token, interestOf(e.Token))
						seen++
					}
				}
				require.NotZero(t, seen)
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
