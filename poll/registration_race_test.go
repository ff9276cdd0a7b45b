package poll

// Reregister of a Registration racing with SetReadiness on other
// goroutines (see registration_test.go for the contract).

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/testsupport"
)

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
