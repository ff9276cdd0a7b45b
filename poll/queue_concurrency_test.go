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
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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

// startProducers starts producers goroutines, each running produce on
// perProducer keys of its own; the WaitGroup is done when they all are.
func (rig *ackRig) startProducers(t *testing.T, producers, perProducer, rounds int) *sync.WaitGroup {
	wg := &sync.WaitGroup{}
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
	return wg
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
				wg := rig.startProducers(t, producers, perProducer, rounds)
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
				wg := rig.startProducers(t, producers, perProducer, rounds)
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
