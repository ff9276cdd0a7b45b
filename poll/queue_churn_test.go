package poll

// Concurrency tests of the readiness queue (see queue_concurrency_test.go):
// Registrations that come and go, and a Poll closed, while producers run.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/testsupport"
)

// TestQueueChurn: 50,000 Registrations are created, registered, made ready
// and closed by producer goroutines while one goroutine polls. No panic; no
// event for a token never registered; no event from a Poll call that
// started after the Registration's Close returned (rule 7); and afterwards
// the Poll holds no Registration: the queue, the wheel and the held list
// are empty.
func TestQueueChurn(t *testing.T) {
	const producers, perProducer = 4, 12500
	const total = producers * perProducer
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		p := newPoll(t)
		var seq atomic.Uint64
		registered := make([]atomic.Bool, total)
		// closedAt[k] is a value of seq taken after Close of k returned.
		closedAt := make([]atomic.Uint64, total)
		var done atomic.Int32
		var wg sync.WaitGroup
		optsOf := []PollOpt{Edge, Level, Oneshot, Edge | Oneshot}
		for g := range producers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer done.Add(1)
				rng := rand.New(rand.NewPCG(uint64(g), 1))
				for i := range perProducer {
					k := g*perProducer + i
					r, s := NewRegistration()
					opts := optsOf[k%len(optsOf)]
					// Some are made ready before Register, some after.
					early := rng.IntN(2) == 0
					if early {
						if err := s.SetReadiness(Readable); err != nil {
							t.Errorf("SetReadiness before Register: %v", err)
							return
						}
					}
					registered[k].Store(true)
					if err := p.Register(r, Token(k), Readable, opts); err != nil {
						t.Errorf("Register(%d): %v", k, err)
						return
					}
					if !early {
						if err := s.SetReadiness(Readable); err != nil {
							t.Errorf("SetReadiness(%d): %v", k, err)
							return
						}
					}
					if rng.IntN(4) == 0 {
						if err := s.DelayReadiness(Readable, time.Duration(rng.IntN(3))*time.Millisecond); err != nil {
							t.Errorf("DelayReadiness(%d): %v", k, err)
							return
						}
					}
					// Give the poller a chance to see some of them.
					if rng.IntN(8) == 0 {
						for range rng.IntN(200) {
							_ = s.Readiness()
						}
					}
					if err := r.Close(); err != nil {
						t.Errorf("Close(%d): %v", k, err)
						return
					}
					closedAt[k].Store(seq.Add(1))
					if err := s.SetReadiness(Readable); !errors.Is(err, ErrClosed) {
						t.Errorf("SetReadiness(%d) after Close: %v, want ErrClosed", k, err)
						return
					}
				}
			}()
		}
		ev := NewEvents(64)
		events, late := 0, 0
		deadline := time.Now().Add(25 * time.Second)
		for done.Load() < producers {
			if time.Now().After(deadline) {
				break
			}
			start := seq.Load()
			n, err := p.Poll(ev, 5*time.Millisecond)
			if !assert.NoError(t, err, "Poll") {
				break
			}
			events += n
			seen := map[Token]bool{}
			for e := range ev.All() {
				k := int(e.Token)
				if k < 0 || k >= total || !registered[k].Load() {
					t.Errorf("event for a token never registered: %v", e)
					continue
				}
				if seen[e.Token] {
					t.Errorf("rule 1: token %d twice in one call", k)
				}
				seen[e.Token] = true
				if c := closedAt[k].Load(); c != 0 && c <= start {
					late++
					if late <= 10 {
						t.Errorf("event %v from a Poll call started after Close of %d returned (close seq %d, poll start seq %d)", e, k, c, start)
					}
				}
			}
		}
		wg.Wait()
		require.Equal(t, int32(producers), done.Load(), "producers did not finish within 25s")
		require.Zero(t, late, "events after Close returned")
		// Everything is closed: nothing is reported any more, and the Poll
		// keeps no reference to any Registration.
		for range 3 {
			require.Empty(t, pollEvents(t, p, ev, 0))
		}
		requireNoEvents(t, p, ev)
		requireQueueEmpty(t, p)
		t.Logf("%d events for %d registrations", events, total)
	})
}

// TestQueuePollCloseWhileProducing closes a Poll while producer goroutines
// keep setting readiness, delaying it, registering and reregistering: they
// get nil or ErrClosed and never panic, and the goroutine blocked in Poll
// returns ErrClosed.
func TestQueuePollCloseWhileProducing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		for iter := range 5 {
			t.Run(fmt.Sprint(iter), func(t *testing.T) {
				p := newPoll(t)
				const producers, perProducer = 4, 16
				var produced atomic.Int64
				var afterClose atomic.Int64
				var closed atomic.Bool
				stop := make(chan struct{})
				var wg sync.WaitGroup
				okErr := func(what string, err error) bool {
					if err != nil && !errors.Is(err, ErrClosed) {
						t.Errorf("%s: %v, want nil or ErrClosed", what, err)
						return false
					}
					return true
				}
				for g := range producers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						rng := rand.New(rand.NewPCG(uint64(g), uint64(iter)))
						regs := make([]*Registration, perProducer)
						sets := make([]*SetReadiness, perProducer)
						// bound[i]: regs[i] is bound to p. One whose Register
						// failed with ErrClosed is not, and DelayReadiness
						// then rightly says ErrNotRegistered.
						bound := make([]bool, perProducer)
						register := func(i int, opts PollOpt) bool {
							err := p.Register(regs[i], Token(g*perProducer+i), Readable|Writable, opts)
							bound[i] = err == nil
							return okErr("Register", err)
						}
						defer func() {
							for _, r := range regs {
								if r != nil {
									_ = r.Close()
								}
							}
						}()
						for i := range regs {
							regs[i], sets[i] = NewRegistration()
							if !register(i, modes[i%len(modes)].opts) {
								return
							}
						}
						for {
							select {
							case <-stop:
								return
							default:
							}
							wasClosed := closed.Load()
							i := rng.IntN(perProducer)
							s := sets[i]
							var ok bool
							switch op := rng.IntN(10); {
							case op < 5:
								ok = okErr("SetReadiness", s.SetReadiness(Readable))
							case op < 7:
								ok = okErr("UnsetReadiness", s.UnsetReadiness(Readable|Writable))
							case op < 8:
								err := s.DelayReadiness(Writable, time.Duration(rng.IntN(2000))*time.Microsecond)
								if !bound[i] && errors.Is(err, ErrNotRegistered) {
									err = nil
								}
								ok = okErr("DelayReadiness", err)
							case op < 9:
								ok = okErr("Reregister", p.Reregister(regs[i], Token(g*perProducer+i), Readable|Writable, modes[rng.IntN(len(modes))].opts))
							default:
								_ = regs[i].Close()
								regs[i], sets[i] = NewRegistration()
								ok = register(i, Edge)
							}
							if !ok {
								return
							}
							produced.Add(1)
							if wasClosed {
								afterClose.Add(1)
							}
						}
					}()
				}
				var polled atomic.Int64
				pollErr := make(chan error, 1)
				go func() {
					ev := NewEvents(8)
					for {
						n, err := p.Poll(ev, -1)
						if err != nil {
							pollErr <- err
							return
						}
						polled.Add(int64(n))
					}
				}()
				defer func() {
					close(stop)
					wg.Wait()
				}()

				testsupport.WaitFor(t, "500 events before Close", func() bool { return polled.Load() >= 500 })
				require.NoError(t, p.Close())
				closed.Store(true)
				select {
				case err := <-pollErr:
					require.ErrorIs(t, err, ErrClosed, "the blocked Poll's error")
				case <-time.After(eventWait):
					require.FailNow(t, "Poll did not return after Close")
				}
				// Producers keep going against the closed Poll for a while.
				testsupport.WaitFor(t, "2000 operations after Close", func() bool { return afterClose.Load() >= 2000 })
				require.ErrorIs(t, p.Close(), ErrClosed)
				_, err := p.Poll(NewEvents(1), 0)
				require.ErrorIs(t, err, ErrClosed)
			})
		}
	})
}
