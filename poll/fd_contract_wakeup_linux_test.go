package poll

// Rule 8 of the contract for descriptors: readiness produced by another
// goroutine, or a registration change, wakes a blocked Poll.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Rule 8: readiness produced by another goroutine wakes a Poll blocked with
// a negative timeout, in every mode, for every kind.
//
// The Poll is looking at the descriptor while fire makes it ready: Stats
// counts a select before the selector call, and poll(2) looks at every
// descriptor before it sleeps; the io_uring backend arms its poll then. A
// change the kernel makes in steps (a TCP reset: tryReset; a FIN) can
// then be seen half made, which the contract allows:
// the event carries what the kernel showed, k.early, and the rest comes as
// new readiness by the mode's rule (requireRest).
func TestFdRule8WakesBlockedPoll(t *testing.T) {
	forModesKinds(t, nil, func(t *testing.T, p *Poll, opts PollOpt, k readyKind, kf kindFd) {
		require.NoError(t, p.Register(Fd(kf.fd), 9, k.interest, opts))
		res := startPollForever(p)
		waitSelecting(t, p, 0)
		kf.fire(t)
		evs := res.wait(t, p)
		if k.early != 0 && len(evs) == 1 && evs[0] == (Event{Token: 9, Ready: k.early}) {
			t.Logf("the blocked Poll saw the change half made: %v", evs[0].Ready)
			requireRest(t, p, kf.fd, 9, k.interest, opts, k.want)
			return
		}
		require.Equal(t, []Event{{Token: 9, Ready: k.want}}, evs)
	})
}

// Rule 8 with registration changes as the trigger: a Poll blocked forever
// wakes up for a ready descriptor registered, or a disarmed oneshot
// descriptor re-armed, by another goroutine; and (rule 7) a descriptor
// deregistered meanwhile is not reported by it.
func TestFdRule8RegisterWakesBlockedPoll(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		forModes(t, nil, func(t *testing.T, opts PollOpt) {
			t.Run("Register", func(t *testing.T) {
				a, b := socketPair(t)
				p := newPoll(t)
				writeFd(t, b, []byte("x"))
				res := startPollForever(p)
				waitSelecting(t, p, 0)
				require.NoError(t, p.Register(Fd(a), 1, Readable, opts))
				require.Equal(t, []Event{{Token: 1, Ready: Readable}}, res.wait(t, p))
			})
			t.Run("DeregisterWhileBlocked", func(t *testing.T) {
				// Deregister while a Poll is blocked: readiness of the
				// deregistered descriptor is not reported, and the Poll
				// goes on waiting for the one still registered.
				a, b := socketPair(t)
				c, d := socketPair(t)
				p := newPoll(t)
				require.NoError(t, p.Register(Fd(a), 1, Readable, opts))
				require.NoError(t, p.Register(Fd(c), 2, Readable, opts))
				res := startPollForever(p)
				waitSelecting(t, p, 0)
				require.NoError(t, p.Deregister(Fd(a)))
				writeFd(t, b, []byte("x"))
				waitKernelReady(t, a, unix.POLLIN)
				writeFd(t, d, []byte("x"))
				require.Equal(t, []Event{{Token: 2, Ready: Readable}}, res.wait(t, p))
			})
			t.Run("ReregisterOneshot", func(t *testing.T) {
				a, b := socketPair(t)
				p := newPoll(t)
				ev := NewEvents(4)
				writeFd(t, b, []byte("x"))
				require.NoError(t, p.Register(Fd(a), 1, Readable, opts|Oneshot))
				requireEvent(t, p, ev, 1, Readable)
				before := p.Stats().Selects
				res := startPollForever(p)
				waitSelecting(t, p, before)
				require.NoError(t, p.Reregister(Fd(a), 2, Readable, opts|Oneshot))
				require.Equal(t, []Event{{Token: 2, Ready: Readable}}, res.wait(t, p))
			})
		})
	})
}

// foreverPoll is a Poll(ev, -1) running in its own goroutine.
type foreverPoll struct {
	ch chan foreverOutcome
}

type foreverOutcome struct {
	evs []Event
	err error
}

// blockedPoll starts p.Poll(ev, -1) in a goroutine.
func startPollForever(p *Poll) foreverPoll {
	r := foreverPoll{ch: make(chan foreverOutcome, 1)}
	go func() {
		ev := NewEvents(8)
		_, err := p.Poll(ev, -1)
		var evs []Event
		for e := range ev.All() {
			evs = append(evs, e)
		}
		r.ch <- foreverOutcome{evs, err}
	}()
	return r
}

// wait returns the blocked Poll's events. If it does not return within
// eventWait it closes p (which must make the Poll return) and fails.
func (r foreverPoll) wait(t testing.TB, p *Poll) []Event {
	t.Helper()
	select {
	case o := <-r.ch:
		require.NoError(t, o.err)
		requireUniqueTokens(t, o.evs)
		return o.evs
	case <-time.After(eventWait):
		_ = p.Close()
		<-r.ch
		require.FailNow(t, "blocked Poll(-1) was not woken")
		return nil
	}
}
