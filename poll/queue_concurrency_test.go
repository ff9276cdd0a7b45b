package poll

// Concurrency tests of the readiness queue, meant to run under -race:
// producers and pollers in many goroutines, with protocols that count every
// event exactly, so that a lost, duplicated or stale event fails the test.
//
// Registrations never produce spurious events in this implementation (rule
// 9 allows them, but only the descriptor emulations use that freedom), so
// the tests below count exactly: one event per SetReadiness made after the
// consumer acknowledged the previous one.

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

// Outstanding states of a Registration in the acknowledgement protocol.
const (
	ackIdle     = 0 // no SetReadiness outstanding: an event now is an error
	ackSet      = 1 // the producer has set readiness and waits for the ack
	ackHandling = 2 // a consumer has taken the event and is acknowledging it
)

// ackRig is a set of Registrations driven by the acknowledgement protocol:
// a producer marks a Registration ackSet, sets its readiness and waits on
// its ack channel; the consumer that receives the event moves it
// ackSet -> ackHandling (anything else is a lost, duplicate or spurious
// event), clears the readiness (re-arms oneshot), counts it, marks it
// ackIdle and acknowledges.
type ackRig struct {
	p     *Poll
	opts  PollOpt
	regs  []*Registration
	sets  []*SetReadiness
	state []atomic.Uint32
	count []atomic.Int64
	acks  []chan struct{}
	total atomic.Int64
	stop  chan struct{}
	once  sync.Once
}

func newAckRig(t *testing.T, p *Poll, n int, opts PollOpt) *ackRig {
	rig := &ackRig{
		p: p, opts: opts,
		regs: make([]*Registration, n), sets: make([]*SetReadiness, n),
		state: make([]atomic.Uint32, n), count: make([]atomic.Int64, n),
		acks: make([]chan struct{}, n), stop: make(chan struct{}),
	}
	for k := range n {
		rig.regs[k], rig.sets[k] = newRegistered(t, p, Token(k), Readable, opts)
		rig.acks[k] = make(chan struct{}, 1)
	}
	return rig
}

func (rig *ackRig) halt() { rig.once.Do(func() { close(rig.stop) }) }

// produce runs one producer over the Registrations keys for rounds rounds:
// it sets all of them, then waits for all their acks. It reports failures
// with t.Errorf (it runs in its own goroutine) and halts the rig.
func (rig *ackRig) produce(t *testing.T, keys []int, rounds int) {
	for round := range rounds {
		for _, k := range keys {
			if !rig.state[k].CompareAndSwap(ackIdle, ackSet) {
				t.Errorf("producer: registration %d not idle before round %d", k, round)
				rig.halt()
				return
			}
			if err := rig.sets[k].SetReadiness(Readable); err != nil {
				t.Errorf("producer: SetReadiness(%d): %v", k, err)
				rig.halt()
				return
			}
		}
		for _, k := range keys {
			select {
			case <-rig.acks[k]:
			case <-rig.stop:
				return
			case <-time.After(eventWait):
				t.Errorf("producer: no ack for registration %d in round %d within %v: SetReadiness lost (state %d, count %d)",
					k, round, eventWait, rig.state[k].Load(), rig.count[k].Load())
				rig.halt()
				return
			}
		}
	}
}

// handle is the consumer side for one event. It returns an error for an
// event that the protocol did not expect.
func (rig *ackRig) handle(e Event) error {
	k := int(e.Token)
	if k < 0 || k >= len(rig.regs) {
		return fmt.Errorf("event for unknown token %d", e.Token)
	}
	if e.Ready != Readable {
		return fmt.Errorf("event %v: want Readable", e)
	}
	if st := rig.state[k].Load(); st != ackSet || !rig.state[k].CompareAndSwap(ackSet, ackHandling) {
		return fmt.Errorf("event %v with no SetReadiness outstanding (state %d, %d events so far): duplicate or spurious", e, st, rig.count[k].Load())
	}
	if err := rig.sets[k].UnsetReadiness(Readable); err != nil {
		return fmt.Errorf("UnsetReadiness(%d): %w", k, err)
	}
	if rig.opts.IsOneshot() {
		if err := rig.p.Reregister(rig.regs[k], Token(k), Readable, rig.opts); err != nil {
			return fmt.Errorf("Reregister(%d): %w", k, err)
		}
	}
	rig.count[k].Add(1)
	rig.total.Add(1)
	rig.state[k].Store(ackIdle)
	rig.acks[k] <- struct{}{}
	return nil
}

// TestQueueProducersAck: 8 producer goroutines set readiness on 64
// Registrations (8 each) while one goroutine polls; every SetReadiness made
// after the previous acknowledgement must be reported exactly once.
func TestQueueProducersAck(t *testing.T) {
	const producers, perProducer, rounds = 8, 8, 150
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		for _, m := range modes {
			t.Run(m.name, func(t *testing.T) {
				p := newPoll(t)
				rig := newAckRig(t, p, producers*perProducer, m.opts)
				var wg sync.WaitGroup
				for g := range producers {
					keys := make([]int, perProducer)
					for i := range keys {
						keys[i] = g*perProducer + i
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						rig.produce(t, keys, rounds)
					}()
				}
				defer wg.Wait()
				defer rig.halt()

				want := int64(producers * perProducer * rounds)
				ev := NewEvents(16)
				deadline := time.Now().Add(20 * time.Second)
				for rig.total.Load() < want {
					select {
					case <-rig.stop:
						t.FailNow() // a producer reported the failure
					default:
					}
					require.True(t, time.Now().Before(deadline), "only %d of %d events after 20s", rig.total.Load(), want)
					for _, e := range pollEvents(t, p, ev, 50*time.Millisecond) {
						if err := rig.handle(e); err != nil {
							rig.halt()
							require.NoError(t, err)
						}
					}
				}
				wg.Wait()
				for k := range rig.count {
					require.Equal(t, int64(rounds), rig.count[k].Load(), "events for registration %d", k)
				}
				requireNoEvents(t, p, ev)
			})
		}
	})
}

// TestQueueConcurrentPollers: several goroutines call Poll on one Poll at
// once while producers set readiness. Concurrent Poll calls are serialised,
// so across all of them every SetReadiness is reported exactly once: the
// total equals what was produced and no event is taken twice. Level without
// oneshot is left out: there a second poller may rightly see the source
// again before the first one has cleared it.
func TestQueueConcurrentPollers(t *testing.T) {
	const pollers, producers, perProducer, rounds = 4, 4, 16, 100
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		for _, m := range modes {
			if !m.opts.IsEdge() && !m.opts.IsOneshot() {
				continue
			}
			t.Run(m.name, func(t *testing.T) {
				p := newPoll(t)
				rig := newAckRig(t, p, producers*perProducer, m.opts)
				want := int64(producers * perProducer * rounds)
				var wg sync.WaitGroup
				for g := range producers {
					keys := make([]int, perProducer)
					for i := range keys {
						keys[i] = g*perProducer + i
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						rig.produce(t, keys, rounds)
					}()
				}
				var calls, withEvents atomic.Int64
				for range pollers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						ev := NewEvents(8)
						deadline := time.Now().Add(20 * time.Second)
						for rig.total.Load() < want {
							select {
							case <-rig.stop:
								return
							default:
							}
							if time.Now().After(deadline) {
								t.Errorf("poller: only %d of %d events after 20s", rig.total.Load(), want)
								rig.halt()
								return
							}
							n, err := p.Poll(ev, 10*time.Millisecond)
							if err != nil {
								t.Errorf("poller: Poll: %v", err)
								rig.halt()
								return
							}
							calls.Add(1)
							if n > 0 {
								withEvents.Add(1)
							}
							seen := map[Token]bool{}
							for e := range ev.All() {
								if seen[e.Token] {
									t.Errorf("poller: rule 1: token %d twice in one call", e.Token)
									rig.halt()
									return
								}
								seen[e.Token] = true
								if err := rig.handle(e); err != nil {
									t.Errorf("poller: %v", err)
									rig.halt()
									return
								}
							}
						}
					}()
				}
				wg.Wait()
				require.False(t, t.Failed())
				require.Equal(t, want, rig.total.Load())
				for k := range rig.count {
					require.Equal(t, int64(rounds), rig.count[k].Load(), "events for registration %d", k)
				}
				requireNoEvents(t, p, NewEvents(8))
				t.Logf("%d Poll calls, %d with events", calls.Load(), withEvents.Load())
			})
		}
	})
}

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

// TestQueueWakeCoalescing: a burst of 1,000 SetReadiness calls (on 1,000
// Registrations, from one goroutine) to a Poll asleep in another goroutine
// costs at most 2 waker writes; at least one, since the Poll slept. The
// same holds for 1,000 calls on one Registration, and for a burst that may
// or may not find the Poll asleep. Every Registration of the burst is
// reported, once when each was set once. And a Poll that never sleeps
// (polled with a zero timeout) costs no waker write at all.
func TestQueueWakeCoalescing(t *testing.T) {
	const n = 1000
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		p := newPoll(t)
		sets := make([]*SetReadiness, n)
		for k := range sets {
			_, sets[k] = newRegistered(t, p, Token(k), Readable, Edge)
		}
		ev := NewEvents(64)
		burst := func(round int, asleep bool, keys []int) {
			t.Helper()
			ch := pollAsync(p, ev, -1)
			if asleep {
				waitAsleep(t, p)
			}
			before := p.Stats().WakerWrites
			for _, k := range keys {
				require.NoError(t, sets[k].SetReadiness(Readable))
			}
			res := awaitPoll(t, p, ch, fmt.Sprintf("round %d", round))
			require.NoError(t, res.err)
			delta := p.Stats().WakerWrites - before
			require.LessOrEqual(t, delta, uint64(2), "round %d: %d SetReadiness calls to a sleeping Poll cost %d waker writes", round, len(keys), delta)
			if asleep {
				require.GreaterOrEqual(t, delta, uint64(1), "round %d: a sleeping Poll was woken without a waker write", round)
			}
			// Every Registration in the burst is reported exactly once.
			got := map[Token]int{}
			for _, e := range res.evs {
				got[e.Token]++
			}
			distinct := map[int]bool{}
			for _, k := range keys {
				distinct[k] = true
			}
			for {
				evs := pollEvents(t, p, ev, 0)
				if len(evs) == 0 {
					break
				}
				for _, e := range evs {
					got[e.Token]++
				}
			}
			require.Len(t, got, len(distinct), "round %d: Registrations reported", round)
			for tok, c := range got {
				require.True(t, distinct[int(tok)], "round %d: unexpected token %d", round, tok)
				if len(distinct) == len(keys) {
					// Each set once during the burst: one edge each.
					require.Equal(t, 1, c, "round %d: token %d reported %d times", round, tok, c)
				}
				// Else the same one set again after the woken Poll took it:
				// a new edge each time, so more than one event is right.
			}
			requireNoEvents(t, p, ev)
		}
		all := make([]int, n)
		for k := range all {
			all[k] = k
		}
		same := make([]int, n)
		for round := range 5 {
			burst(round, true, all)
		}
		for round := range 3 {
			for i := range same {
				same[i] = round
			}
			burst(10+round, true, same)
		}
		for round := range 20 {
			burst(20+round, false, all)
		}

		// A Poll that never sleeps (timeout 0) is never woken: SetReadiness
		// from another goroutine while it polls costs no waker write.
		before := p.Stats().WakerWrites
		done := make(chan error, 1)
		go func() {
			for round := range 20 {
				for _, s := range sets {
					if err := s.SetReadiness(Readable); err != nil {
						done <- fmt.Errorf("round %d: %w", round, err)
						return
					}
				}
			}
			done <- nil
		}()
		var produced error
		for finished := false; !finished; {
			select {
			case produced = <-done:
				finished = true
			default:
			}
			_, err := p.Poll(ev, 0)
			require.NoError(t, err)
		}
		require.NoError(t, produced)
		for {
			if evs := pollEvents(t, p, ev, 0); len(evs) == 0 {
				break
			}
		}
		require.Zero(t, p.Stats().WakerWrites-before, "waker writes to a Poll that never slept")
	})
}
