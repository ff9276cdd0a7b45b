//go:build linux

package proptest

// Concurrency property: no lost wake-ups (rule 8), with an acknowledgement
// protocol between producers and the consumer.

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
)

// ackSource is one source owned by a producer.
type ackSource struct {
	source
	label    string
	token    poll.Token
	opts     poll.PollOpt
	awaiting atomic.Int64
	ack      chan struct{}
}

// TestConcurrentNoLostWakeup: producers make their sources ready, each time
// waiting until the consumer has observed it and acknowledged; the consumer
// blocks in Poll (mostly forever). Every readiness made after the
// acknowledgement must be observed by a later Poll: a blocked Poll must
// wake up (rule 8). The consumer puts the source back to not-ready before
// it acknowledges (unset, drain, reregister a oneshot), so every event is
// attributed exactly: an event nobody waits for is counted as spurious.
func TestConcurrentNoLostWakeup(t *testing.T) {
	forEachBackend(t, noLostWakeup)
}

func noLostWakeup(t *rapid.T, be string) {
	p := drawPoll(t, be)
	defer p.Close()
	producers := rapid.IntRange(1, 4).Draw(t, "producers")
	rounds := rapid.IntRange(1, 30).Draw(t, "rounds")
	capacity := rapid.IntRange(1, 8).Draw(t, "capacity")
	blocking := rapid.IntRange(0, 3).Draw(t, "consumer timeout (0: 20ms, else forever)") != 0
	var fails failures
	byToken := map[poll.Token]*ackSource{}
	var srcs [][]*ackSource
	for i := 0; i < producers; i++ {
		var mine []*ackSource
		for j := rapid.IntRange(1, 2).Draw(t, "sources"); j > 0; j-- {
			s := &ackSource{source: noSource, token: poll.Token(len(byToken) + 1), ack: make(chan struct{}, 1)}
			s.opts = drawOpts(t)
			if rapid.IntRange(0, 3).Draw(t, "kind (0: socket, else registration)") == 0 {
				fds := socketPair(t)
				s.a, s.b = fds[0], fds[1]
				defer unix.Close(s.a)
				defer unix.Close(s.b)
				s.label = fmt.Sprintf("sock(token %d, %s)", s.token, s.opts)
			} else {
				s.reg, s.set = poll.NewRegistration()
				defer s.reg.Close()
				s.label = fmt.Sprintf("reg(token %d, %s)", s.token, s.opts)
			}
			if err := p.Register(s.evented(), s.token, poll.Readable, s.opts); err != nil {
				t.Fatalf("Register %s: %v", s.label, err)
			}
			byToken[s.token] = s
			mine = append(mine, s)
		}
		srcs = append(srcs, mine)
	}
	schedules := make([][]int, producers)
	for i := range schedules {
		schedules[i] = drawSchedule(t, rounds, fmt.Sprintf("schedule of producer %d", i))
	}

	var spurious atomic.Int64
	consumerDone := make(chan struct{})
	go func() {
		defer close(consumerDone)
		ev := poll.NewEvents(capacity)
		timeout := time.Duration(-1)
		if !blocking {
			timeout = 20 * time.Millisecond
		}
		for {
			if !consumerPoll(p, ev, timeout, true, fails.add) {
				return
			}
			seen := map[poll.Token]bool{}
			for e := range counted(ev) {
				s := byToken[e.Token]
				switch {
				case s == nil:
					fails.add("event for token %d, never registered", e.Token)
					continue
				case seen[e.Token]:
					fails.add("two events for %s in one Poll call (rule 1)", s.label)
				case e.Ready&^poll.Readable != 0:
					fails.add("event for %s with %s, interest Readable (rule 6)", s.label, e.Ready)
				}
				seen[e.Token] = true
				if s.awaiting.Load() == 0 {
					spurious.Add(1)
					continue
				}
				// Make it not ready again, then acknowledge.
				if s.reg != nil {
					if s.opts.IsLevel() || s.opts.IsOneshot() {
						_ = s.set.UnsetReadiness(poll.Readable)
					}
				} else if n, _, _, err := readAll(s.a); err != nil || n == 0 {
					fails.add("%s: event but drain read %d, %v", s.label, n, err)
				} else if err := poll.Fd(s.a).Drained(p, poll.Readable); err != nil {
					fails.add("Rearm %s after EAGAIN: %v", s.label, err)
				}
				if s.opts.IsOneshot() {
					if err := p.Reregister(s.evented(), s.token, poll.Readable, s.opts); err != nil {
						fails.add("Reregister %s: %v", s.label, err)
					}
				}
				s.awaiting.Store(0)
				s.ack <- struct{}{}
			}
		}
	}()

	var wg sync.WaitGroup
	for i := range srcs {
		wg.Add(1)
		go func(mine []*ackSource, sched []int) {
			defer wg.Done()
			for r, k := range sched {
				for _, s := range mine {
					pause(k)
					s.awaiting.Store(int64(r + 1))
					if s.reg != nil {
						if err := s.set.SetReadiness(poll.Readable); err != nil {
							fails.add("SetReadiness %s: %v", s.label, err)
							return
						}
					} else if _, err := unix.Write(s.b, []byte{1}); err != nil {
						fails.add("write %s: %v", s.label, err)
						return
					}
					select {
					case <-s.ack:
					case <-time.After(ackTimeout):
						fails.add("lost wake-up: %s made ready in round %d was not observed by any Poll within %v (consumer blocking=%v, capacity %d) (rule 8)",
							s.label, r+1, ackTimeout, blocking, capacity)
						_ = p.Close()
						return
					}
				}
			}
		}(srcs[i], schedules[i])
	}
	wg.Wait()
	totals.rounds.Add(int64(producers * rounds))
	if err := p.Close(); err != nil && !errors.Is(err, poll.ErrClosed) {
		fails.add("Close: %v", err)
	}
	select {
	case <-consumerDone:
	case <-time.After(ackTimeout):
		fails.add("Poll did not return ErrClosed within %v of Close", ackTimeout)
	}
	totals.spurious.Add(spurious.Load())
	fails.report(t)
}
