//go:build linux

package proptest

// Concurrency property: descriptor numbers reused (rule 7).

import (
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
)

// TestConcurrentFdReuse: a goroutine cycles descriptors the way an accept
// loop does: a ready socket is registered, then deregistered and closed,
// and a fresh socket, which usually gets the same number, is registered in
// its place and never made ready. The consumer polls all along. The fresh
// socket must never be reported: the only event it could get is a stale
// kernel event of the number's previous owner (which the generation in the
// kernel key exists to recognise), and its token must carry it nowhere.
func TestConcurrentFdReuse(t *testing.T) {
	forEachBackendSoak(t, 4, fdReuse)
}

func fdReuse(t *rapid.T, be string) {
	p := drawPoll(t, be)
	defer p.Close()
	cycles := rapid.IntRange(1, 40).Draw(t, "cycles")
	sched := drawSchedule(t, 2*cycles, "pauses")
	opts := drawOpts(t)
	capacity := rapid.IntRange(1, 4).Draw(t, "capacity")
	var fails failures
	// quiet[tok] is set for tokens of sockets never made ready; ready ones
	// get their token retired when deregistered.
	var mu sync.RWMutex
	quiet := map[poll.Token]bool{}
	retiredAt := map[poll.Token]int64{}
	var clock atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		ev := poll.NewEvents(capacity)
		for !stopped(stop) {
			start := clock.Add(1)
			if !consumerPoll(p, ev, 0, false, fails.add) {
				return
			}
			for e := range counted(ev) {
				mu.RLock()
				q, r := quiet[e.Token], retiredAt[e.Token]
				mu.RUnlock()
				if q {
					fails.add("%v for a socket that was never ready: a stale kernel event of the descriptor number's previous owner (rule 7; %s)", e, opts)
				}
				if r != 0 && r < start {
					fails.add("%v after its Deregister returned (rule 7)", e)
				}
			}
		}
	}()
	open := func() (int, int) {
		fds := socketPair(t)
		return fds[0], fds[1]
	}
	tok := poll.Token(0)
	for i := 0; i < cycles; i++ {
		// A ready socket...
		a, b := open()
		_, _ = unix.Write(b, []byte("x"))
		tok++
		if err := p.Register(poll.Fd(a), tok, poll.Readable|poll.Writable, opts); err != nil {
			fails.add("Register: %v", err)
		}
		pause(sched[2*i])
		if err := p.Deregister(poll.Fd(a)); err != nil {
			fails.add("Deregister: %v", err)
		}
		mu.Lock()
		retiredAt[tok] = clock.Add(1)
		mu.Unlock()
		unix.Close(a)
		unix.Close(b)
		// ...replaced by a quiet one, usually with the same number.
		a, b = open()
		tok++
		mu.Lock()
		quiet[tok] = true
		mu.Unlock()
		if err := p.Register(poll.Fd(a), tok, poll.Readable, opts); err != nil {
			fails.add("Register: %v", err)
		}
		pause(sched[2*i+1])
		if err := p.Deregister(poll.Fd(a)); err != nil {
			fails.add("Deregister: %v", err)
		}
		unix.Close(a)
		unix.Close(b)
	}
	close(stop)
	<-done
	totals.rounds.Add(int64(cycles))
	fails.report(t)
}
