package poll

// Concurrency tests of the readiness queue (see queue_concurrency_test.go):
// how many waker writes a burst of SetReadiness costs a sleeping Poll.

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

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
