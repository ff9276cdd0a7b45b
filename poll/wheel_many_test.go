package poll

// Delayed readiness in numbers: many delays at once, delays that share a
// slot across rotations, and delays made, cancelled and replaced from
// several goroutines (the helpers are in wheel_test.go).

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWheelManyDelays: 1,000 Registrations with random delays up to 30 ms,
// set in one burst; every one fires exactly once, none early.
func TestWheelManyDelays(t *testing.T) {
	const n = 1000
	for _, b := range backends(t) {
		t.Run(b, func(t *testing.T) {
			for _, c := range wheelConfigs[:2] {
				t.Run(c.name, func(t *testing.T) {
					p := newPollConfig(t, Config{Backend: b, WheelTick: c.tick, WheelSlots: c.slots})
					seed := uint64(time.Now().UnixNano())
					t.Logf("seed %d", seed)
					rng := rand.New(rand.NewPCG(seed, 0))
					sets := make([]*SetReadiness, n)
					for k := range sets {
						_, sets[k] = newRegistered(t, p, Token(k), Readable, modes[k%len(modes)].opts)
					}
					// Another goroutine makes the delays while this one
					// polls, so that the first ones are not held up by the
					// burst of the others.
					delays := make([]time.Duration, n)
					starts := make([]time.Time, n)
					for k := range delays {
						delays[k] = time.Duration(rng.Int64N(int64(30*time.Millisecond))) + 1
					}
					burst := make(chan error, 1)
					go func() {
						for k := range sets {
							starts[k] = time.Now()
							if err := sets[k].DelayReadiness(Readable, delays[k]); err != nil {
								burst <- err
								return
							}
						}
						burst <- nil
					}()
					defer func() { <-burst }()
					// The loop only records; checks come after it, so that
					// the consumer's own work does not count as lateness.
					ev := NewEvents(64)
					fired := make([]int, n)
					at := make([]time.Time, n)
					var bad []Event
					got := 0
					deadline := time.Now().Add(eventWait)
					for got < n && len(bad) == 0 && time.Now().Before(deadline) {
						_, err := p.Poll(ev, 50*time.Millisecond)
						require.NoError(t, err)
						now := time.Now()
						for e := range ev.All() {
							k := int(e.Token)
							if k >= n || fired[k] > 0 || e.Ready != Readable {
								bad = append(bad, e)
								continue
							}
							fired[k]++
							got++
							at[k] = now
							// Level sources stay ready: clear them so that
							// they count once.
							require.NoError(t, sets[k].UnsetReadiness(Readable))
						}
					}
					require.NoError(t, <-burst)
					burst <- nil // for the deferred receive
					require.Empty(t, bad, "unknown, repeated or wrong events")
					require.Equal(t, n, got, "delays fired within %v", eventWait)
					var maxLate time.Duration
					for k := range n {
						el := at[k].Sub(starts[k])
						require.GreaterOrEqual(t, el, delays[k], "token %d: delay %v fired early, after %v", k, delays[k], el)
						maxLate = max(maxLate, el-delays[k])
					}
					// Twice the slack: the consumer reports 1,000 events
					// 64 at a time while the burst is still being made.
					t.Logf("%d delays up to 30ms: worst lateness %v (tick %v)", n, maxLate, c.tick)
					require.LessOrEqual(t, maxLate, c.tick+2*lateSlack)
					require.Empty(t, pollEvents(t, p, ev, noEventWait))
					require.Zero(t, p.wheel.Pending())
				})
			}
		})
	}
}

// TestWheelRotation: with a 16 ms rotation, delays that share a slot across
// rotations (18, 34 and 50 ms) fire in order, none early, while other
// delays make the Poll wake up in between; and after the Poll stays away
// longer than a rotation, one call fires exactly the entries that are due
// and none of those due in a later rotation.
func TestWheelRotation(t *testing.T) {
	const tick = time.Millisecond
	for _, b := range backends(t) {
		t.Run(b, func(t *testing.T) {
			p := newPollConfig(t, Config{Backend: b, WheelTick: tick, WheelSlots: 16})
			ev := NewEvents(8)
			delays := []time.Duration{18 * time.Millisecond, 34 * time.Millisecond, 50 * time.Millisecond,
				2 * time.Millisecond, 9 * time.Millisecond, 25 * time.Millisecond, 41 * time.Millisecond}
			sets := make([]*SetReadiness, len(delays))
			for k := range sets {
				_, sets[k] = newRegistered(t, p, Token(k), Readable, Edge)
			}
			start := time.Now()
			for k, d := range delays {
				require.NoError(t, sets[k].DelayReadiness(Readable, d))
			}
			at := make([]time.Duration, len(delays))
			for got := 0; got < len(delays); {
				left := time.Until(start.Add(eventWait))
				require.Positive(t, left, "only %d of %d delays fired", got, len(delays))
				evs := pollEvents(t, p, ev, left)
				el := time.Since(start)
				for _, e := range evs {
					require.Less(t, int(e.Token), len(delays))
					require.Zero(t, at[e.Token], "token %d twice", e.Token)
					at[e.Token] = el
					got++
				}
			}
			for k, d := range delays {
				checkDelay(t, fmt.Sprintf("token %d", k), d, at[k], tick)
			}

			// Stay away from Poll for more than a rotation: 5 ms and 40 ms
			// are then due, 200 ms (a later rotation) is not.
			start = time.Now()
			require.NoError(t, sets[0].DelayReadiness(Readable, 5*time.Millisecond))
			require.NoError(t, sets[1].DelayReadiness(Readable, 40*time.Millisecond))
			require.NoError(t, sets[2].DelayReadiness(Readable, 200*time.Millisecond))
			<-time.After(60 * time.Millisecond) // the gap under test, not synchronisation
			evs := pollEvents(t, p, ev, 0)
			el := time.Since(start)
			require.ElementsMatch(t, []Event{{0, Readable}, {1, Readable}}, evs, "after %v away", el)
			el, r := waitDelayed(t, p, ev, 2, start)
			require.Equal(t, Readable, r)
			// Lateness is meaningless here (the Poll was away), earliness is.
			require.GreaterOrEqual(t, el, 200*time.Millisecond, "200 ms delay fired early")
			require.Zero(t, p.wheel.Pending())
		})
	}
}

// TestWheelConcurrentDelays: goroutines delay, cancel and replace delays
// on their own Registrations while one goroutine polls, under -race. In each
// round a producer makes an hour-long delay and cancels it with
// UnsetReadiness, makes another and replaces it with a short one (1-8 ms),
// and waits for the consumer's acknowledgement. The hour-long delays can
// never fire, so every event must be the short delay of the current round:
// exactly one per round, none early, none without a delay outstanding.
func TestWheelConcurrentDelays(t *testing.T) {
	const producers, rounds = 4, 40
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		p := newPoll(t)
		// due[g] is the earliest time producer g's current delay may be
		// reported; zero when none is outstanding.
		var mu sync.Mutex
		due := make([]time.Time, producers)
		acks := make([]chan struct{}, producers)
		sets := make([]*SetReadiness, producers)
		for g := range sets {
			_, sets[g] = newRegistered(t, p, Token(g), Readable, Edge)
			acks[g] = make(chan struct{}, 1)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for g := range producers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(g), 7))
				s := sets[g]
				for round := range rounds {
					steps := []func() error{
						func() error { return s.DelayReadiness(Readable, time.Hour) },
						func() error { return s.UnsetReadiness(Readable) },
						func() error { return s.DelayReadiness(Readable, time.Hour) },
					}
					for _, step := range steps {
						if err := step(); err != nil {
							t.Errorf("producer %d: %v", g, err)
							return
						}
					}
					d := time.Duration(rng.IntN(8)+1) * time.Millisecond
					mu.Lock()
					due[g] = time.Now().Add(d)
					mu.Unlock()
					if err := s.DelayReadiness(Readable, d); err != nil {
						t.Errorf("producer %d: DelayReadiness: %v", g, err)
						return
					}
					select {
					case <-acks[g]:
					case <-stop:
						return
					case <-time.After(eventWait):
						t.Errorf("producer %d: round %d: delay %v never reported", g, round, d)
						return
					}
				}
			}()
		}
		defer wg.Wait()
		defer close(stop)
		ev := NewEvents(8)
		deadline := time.Now().Add(20 * time.Second)
		for got := 0; got < producers*rounds; {
			require.False(t, t.Failed())
			require.True(t, time.Now().Before(deadline), "%d of %d delays reported", got, producers*rounds)
			for _, e := range pollEvents(t, p, ev, 20*time.Millisecond) {
				now := time.Now()
				g := int(e.Token)
				require.Less(t, g, producers)
				mu.Lock()
				at := due[g]
				due[g] = time.Time{}
				mu.Unlock()
				require.False(t, at.IsZero(), "producer %d: event with no delay outstanding (a cancelled or replaced delay fired)", g)
				require.False(t, now.Before(at), "producer %d: delay fired %v early", g, at.Sub(now))
				require.NoError(t, sets[g].UnsetReadiness(Readable))
				got++
				acks[g] <- struct{}{}
			}
		}
		require.Empty(t, pollEvents(t, p, ev, noEventWait))
		require.Zero(t, p.wheel.Pending())
	})
}
