//go:build linux

package proptest

// Concurrency property: no readiness bit lost under concurrent SetReadiness
// (rules 2, 3, 8).

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/poll"
)

// TestConcurrentNoLostReadiness: producers set readiness bits one at a time,
// in a drawn order and rhythm, never clearing any, while the consumer polls
// in a tight loop (re-arming oneshot sources). Each bit of the interest
// must end up in an event, and Readiness() must keep every bit: a
// SetReadiness racing with the consumer's delivery must be neither
// overwritten nor left unqueued. Bits outside the interest must never be
// reported.
func TestConcurrentNoLostReadiness(t *testing.T) {
	forBackends(t, func(t *testing.T, b string) {
		// A lost set shows only when it lands in a window of a few
		// instructions: many cases.
		checkScaled(t, 5, func(t *rapid.T) { noLostReadiness(t, b) })
	})
}

func noLostReadiness(t *rapid.T, be string) {
	totals.checks.Add(1)
	p := drawPoll(t, be)
	defer p.Close()
	const interest = poll.Readable | poll.Writable | poll.Error | poll.Hup
	const all = interest | poll.Priority
	n := rapid.IntRange(1, 8).Draw(t, "registrations")
	capacity := rapid.IntRange(1, 4).Draw(t, "capacity")
	type regState struct {
		reg   *poll.Registration
		set   *poll.SetReadiness
		opts  poll.PollOpt
		order []poll.Ready
		sched []int
		seen  atomic.Uint32 // union of the bits reported after the last set
		done  atomic.Bool   // every bit set
	}
	regs := make([]*regState, n)
	for i := range regs {
		r := &regState{opts: drawOpts(t)}
		r.reg, r.set = poll.NewRegistration()
		defer r.reg.Close()
		if err := p.Register(r.reg, poll.Token(i+1), interest, r.opts); err != nil {
			t.Fatalf("Register: %v", err)
		}
		perm := rapid.Permutation([]poll.Ready{poll.Readable, poll.Writable, poll.Error, poll.Hup, poll.Priority}).Draw(t, fmt.Sprintf("order %d", i))
		r.order = perm
		r.sched = drawSchedule(t, len(perm), fmt.Sprintf("schedule %d", i))
		regs[i] = r
	}
	var fails failures
	stop := make(chan struct{})
	consumerDone := make(chan struct{})
	go func() {
		defer close(consumerDone)
		ev := poll.NewEvents(capacity)
		for !stopped(stop) {
			if !consumerPoll(p, ev, 0, false, fails.add) {
				return
			}
			for e := range counted(ev) {
				i := int(e.Token) - 1
				if i < 0 || i >= n {
					fails.add("event for unknown token %d", e.Token)
					continue
				}
				r := regs[i]
				if e.Ready&^interest != 0 {
					fails.add("token %d reported %s, outside interest %s (rule 6)", e.Token, e.Ready, poll.Ready(interest))
				}
				if r.done.Load() {
					r.seen.Or(uint32(e.Ready))
				}
				if r.opts.IsOneshot() {
					if err := p.Reregister(r.reg, e.Token, interest, r.opts); err != nil {
						fails.add("Reregister: %v", err)
					}
				}
			}
		}
	}()
	var wg sync.WaitGroup
	for _, r := range regs {
		wg.Add(1)
		go func(r *regState) {
			defer wg.Done()
			last := 0 // the last bit of the interest to be set
			for i, bit := range r.order {
				if bit&interest != 0 {
					last = i
				}
			}
			for i, bit := range r.order {
				pause(r.sched[i])
				if i == last {
					r.done.Store(true) // events from now on must add up to all bits
				}
				if err := r.set.SetReadiness(bit); err != nil {
					fails.add("SetReadiness: %v", err)
				}
			}
		}(r)
	}
	wg.Wait()
	totals.rounds.Add(int64(n))
	for i, r := range regs {
		if got := r.set.Readiness(); got != all {
			fails.add("registration %d (%s): Readiness() = %s after setting %s: a concurrent set was overwritten", i+1, r.opts, got, poll.Ready(all))
		}
	}
	// Every bit of the interest must be reported after the last set: for
	// edge, the last set is an edge whose event carries all of them; for
	// level and re-armed oneshot, every call reports all of them.
	testsupport.Eventually(ackTimeout, func() bool {
		for _, r := range regs {
			if poll.Ready(r.seen.Load())&interest != interest {
				return false
			}
		}
		return true
	})
	close(stop)
	<-consumerDone
	for i, r := range regs {
		if got := poll.Ready(r.seen.Load()); got&interest != interest {
			fails.add("registration %d (%s), bits set in order %v with pauses %v: after the last set, events reported only %s of %s within %v (Readiness %s): a lost notification (rules 2, 3, 8)",
				i+1, r.opts, r.order, r.sched, got, poll.Ready(interest), ackTimeout, r.set.Readiness())
		}
	}
	fails.report(t)
}
