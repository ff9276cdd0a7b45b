package poll

// Rule 7 of the contract for descriptors: Deregister and Reregister
// discard what was pending, also while another goroutine polls.

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Rule 7: Deregister discards readiness the kernel already has, and later
// readiness is not reported either; registering again (under a new token)
// reports it at once (rule 5).
func TestFdRule7DeregisterDiscardsPending(t *testing.T) {
	forModesKinds(t, nil, func(t *testing.T, p *Poll, opts PollOpt, k readyKind, kf kindFd) {
		ev := NewEvents(8)
		require.NoError(t, p.Register(Fd(kf.fd), 1, k.interest, opts))
		kf.fire(t)
		waitKernelReady(t, kf.fd, k.raw)
		require.NoError(t, p.Deregister(Fd(kf.fd)))
		requireNoEvents(t, p, ev)
		requireQuietAfterRefire(t, p, ev, kf, k)
		require.NoError(t, p.Register(Fd(kf.fd), 2, k.interest, opts))
		requireNext(t, p, ev, 2, k.want)
	})
}

// Rule 7: Reregister changes the token. Events, including one for readiness
// the kernel had before Reregister, carry the new token; the old one is
// never reported again.
func TestFdRule7ReregisterChangesToken(t *testing.T) {
	forModesKinds(t, nil, func(t *testing.T, p *Poll, opts PollOpt, k readyKind, kf kindFd) {
		ev := NewEvents(8)
		require.NoError(t, p.Register(Fd(kf.fd), 1, k.interest, opts))
		kf.fire(t)
		waitKernelReady(t, kf.fd, k.raw)
		require.NoError(t, p.Reregister(Fd(kf.fd), 2, k.interest, opts))
		evs := pollEvents(t, p, ev, 0)
		require.Equal(t, []Event{{Token: 2, Ready: k.want}}, evs)
		for range 3 {
			for _, e := range pollEvents(t, p, ev, noEventWait) {
				require.Equal(t, Event{Token: 2, Ready: k.want}, e)
			}
		}
	})
}

// Rule 7 under concurrency: a Poll that starts after Deregister or
// Reregister has returned never reports the old token, although the
// descriptor stays ready throughout and another goroutine is polling all the
// time, so kernel events for the old registration are in flight whenever
// the change is made.
func TestFdRule7NoStaleTokenConcurrent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		forModes(t, []string{"Edge", "Level"}, func(t *testing.T, opts PollOpt) {
			const iterations = 2000
			fds := make([]int, 4)
			for i := range fds {
				fds[i] = eventFd(t)
				eventFdAdd(t, fds[i], 1) // readable for good
			}
			p := newPoll(t)
			// Token of fds[i] at step s is s*len(fds)+i+1; floor[i] is the
			// lowest token of fds[i] a Poll starting now may report.
			floor := make([]atomic.Uint64, len(fds))
			for i, fd := range fds {
				floor[i].Store(uint64(i + 1))
				require.NoError(t, p.Register(Fd(fd), Token(i+1), Readable, opts))
			}
			var stop atomic.Bool
			var stale atomic.Int64
			var polls atomic.Int64
			done := make(chan error, 1)
			go func() {
				ev := NewEvents(len(fds))
				for !stop.Load() {
					var low [4]uint64
					for i := range floor {
						low[i] = floor[i].Load()
					}
					_, err := p.Poll(ev, time.Millisecond)
					if err != nil {
						done <- err
						return
					}
					polls.Add(1)
					for e := range ev.All() {
						i := (uint64(e.Token) - 1) % uint64(len(fds))
						if uint64(e.Token) < low[i] {
							if stale.Add(1) == 1 {
								t.Errorf("stale event %v: fds[%d] had moved on to token >= %d before this Poll started", e, i, low[i])
							}
						}
					}
				}
				done <- nil
			}()
			for s := 1; s <= iterations; s++ {
				i := s % len(fds)
				tok := Token(s*len(fds) + i + 1)
				if s%2 == 0 {
					require.NoError(t, p.Reregister(Fd(fds[i]), tok, Readable, opts))
				} else {
					require.NoError(t, p.Deregister(Fd(fds[i])))
					floor[i].Store(uint64(tok)) // nothing older may show from now on
					require.NoError(t, p.Register(Fd(fds[i]), tok, Readable, opts))
				}
				floor[i].Store(uint64(tok))
			}
			stop.Store(true)
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(eventWait):
				t.Fatal("poller goroutine did not stop")
			}
			require.Zero(t, stale.Load(), "stale events")
			t.Logf("%d polls during %d changes", polls.Load(), iterations)
		})
	})
}
