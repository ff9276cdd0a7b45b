//go:build linux

package proptest

// Concurrency property: no stale event after Deregister, Close or
// Reregister (rule 7).

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

// retireSource is one source of TestConcurrentRetire.
type retireSource struct {
	source
	label string
	// Owned by the retirer goroutine:
	registered bool
	closed     bool
	token      poll.Token
}

// tokenInfo is what a token was registered with; it never changes.
type tokenInfo struct {
	src      *retireSource
	interest poll.Ready
	prev     poll.Ready   // interest of the token it replaced, if any
	regAt    atomic.Int64 // clock when Register/Reregister with it returned
	retAt    atomic.Int64 // clock when Deregister/Close/Reregister away from it returned
}

// TestConcurrentRetire: sources are kept ready (level readiness, and
// producers that keep setting it), while a retirer goroutine deregisters,
// registers again, reregisters with new tokens, interests and modes, and
// closes them, and the consumer polls. No event may carry a token never
// registered; no Poll call that started after Deregister, Close or a
// token-changing Reregister returned may report the old token; every event
// of a Poll that started after Register or Reregister returned carries
// readiness inside that registration's interest. At the end every source
// left registered, level-triggered and ready must be reported. A token
// always carries readiness within the interest it was registered with,
// even from a Poll call that overlaps the Reregister installing it.
func TestConcurrentRetire(t *testing.T) {
	forEachBackend(t, retire)
}

func retire(t *rapid.T, be string) {
	p := drawPoll(t, be)
	defer p.Close()
	var clock atomic.Int64
	var mu sync.RWMutex // guards tokens (the map; the infos are immutable or atomic)
	tokens := map[poll.Token]*tokenInfo{}
	lookup := func(tok poll.Token) *tokenInfo {
		mu.RLock()
		defer mu.RUnlock()
		return tokens[tok]
	}
	nextTok := poll.Token(1)
	issue := func(s *retireSource, interest, prev poll.Ready) (poll.Token, *tokenInfo) {
		mu.Lock()
		defer mu.Unlock()
		tok := nextTok
		nextTok++
		ti := &tokenInfo{src: s, interest: interest, prev: prev}
		tokens[tok] = ti
		return tok, ti
	}
	interests := []poll.Ready{poll.Readable, poll.Writable, poll.Readable | poll.Writable, poll.Readable | poll.Hup}
	nsrc := rapid.IntRange(1, 5).Draw(t, "sources")
	srcs := make([]*retireSource, nsrc)
	for i := range srcs {
		s := &retireSource{source: noSource}
		if rapid.Bool().Draw(t, "socket") {
			fds := socketPair(t)
			s.a, s.b = fds[0], fds[1]
			defer unix.Close(s.a)
			defer unix.Close(s.b)
			_, _ = unix.Write(s.b, []byte{1}) // readable (and writable) for good
			s.label = fmt.Sprintf("sock%d", i)
		} else {
			s.reg, s.set = poll.NewRegistration()
			defer s.reg.Close()
			_ = s.set.SetReadiness(poll.Readable | poll.Writable | poll.Hup)
			s.label = fmt.Sprintf("reg%d", i)
		}
		interest := rapid.SampledFrom(interests).Draw(t, "interest")
		tok, ti := issue(s, interest, 0)
		if err := p.Register(s.evented(), tok, interest, poll.Level); err != nil {
			t.Fatalf("Register: %v", err)
		}
		ti.regAt.Store(clock.Add(1))
		s.registered, s.token = true, tok
		srcs[i] = s
	}
	type retireOp struct {
		src, what, pause int
		interest         poll.Ready
		opts             poll.PollOpt
	}
	nops := rapid.IntRange(1, 20).Draw(t, "operations")
	ops := make([]retireOp, nops)
	for i := range ops {
		ops[i] = retireOp{
			src:      rapid.IntRange(0, nsrc-1).Draw(t, "op source"),
			what:     rapid.IntRange(0, 3).Draw(t, "op (0 deregister, 1 register, 2 reregister, 3 close)"),
			pause:    rapid.IntRange(0, 5).Draw(t, "op pause"),
			interest: rapid.SampledFrom(interests).Draw(t, "op interest"),
			opts:     drawOpts(t),
		}
	}
	capacity := rapid.IntRange(1, 8).Draw(t, "capacity")

	var fails failures
	stop := make(chan struct{})
	var bg sync.WaitGroup
	// Producers keep the registrations' readiness coming (edge sources
	// need new edges to keep being reported).
	for _, s := range srcs {
		if s.reg == nil {
			continue
		}
		bg.Add(1)
		go func(s *retireSource) {
			defer bg.Done()
			for !stopped(stop) {
				if err := s.set.SetReadiness(poll.Readable | poll.Writable | poll.Hup); err != nil && !errors.Is(err, poll.ErrClosed) {
					fails.add("SetReadiness: %v", err)
					return
				}
				time.Sleep(50 * time.Microsecond)
			}
		}(s)
	}
	// The consumer.
	bg.Add(1)
	go func() {
		defer bg.Done()
		ev := poll.NewEvents(capacity)
		for !stopped(stop) {
			start := clock.Add(1)
			if !consumerPoll(p, ev, time.Millisecond, false, fails.add) {
				return
			}
			seen := map[poll.Token]bool{}
			for e := range counted(ev) {
				ti := lookup(e.Token)
				if ti == nil {
					fails.add("event %v: token never registered (rule 7)", e)
					continue
				}
				if seen[e.Token] {
					fails.add("two events for token %d in one call (rule 1)", e.Token)
				}
				seen[e.Token] = true
				if r := ti.retAt.Load(); r != 0 && r < start {
					fails.add("stale event %v for %s: the token was retired (Deregister, Close or Reregister returned) at clock %d, before this Poll started at %d (rule 7)",
						e, ti.src.label, r, start)
				}
				// A token names one registration, with one interest: an
				// event carrying it must respect that interest, also while
				// the Reregister that installs it is in flight.
				if e.Ready&^ti.interest != 0 {
					inflight := ""
					if ra := ti.regAt.Load(); ra == 0 || ra > start {
						inflight = fmt.Sprintf(" (its Reregister was in flight; the previous interest was %s)", ti.prev)
					}
					fails.add("event %v for %s: readiness outside the interest %s of token %d%s (rule 6)", e, ti.src.label, ti.interest, e.Token, inflight)
				}
			}
		}
	}()
	// The retirer (this goroutine).
	for _, op := range ops {
		pause(op.pause)
		s := srcs[op.src]
		if s.closed {
			continue
		}
		old := lookup(s.token)
		switch op.what {
		case 0: // Deregister
			if !s.registered {
				continue
			}
			if err := p.Deregister(s.evented()); err != nil {
				fails.add("Deregister %s: %v", s.label, err)
			}
			old.retAt.Store(clock.Add(1))
			s.registered = false
		case 1: // Register (with a new token)
			if s.registered {
				continue
			}
			tok, ti := issue(s, op.interest, 0)
			if err := p.Register(s.evented(), tok, op.interest, op.opts); err != nil {
				fails.add("Register %s: %v", s.label, err)
			}
			ti.regAt.Store(clock.Add(1))
			s.registered, s.token = true, tok
		case 2: // Reregister with a new token, interest and mode
			if !s.registered {
				continue
			}
			tok, ti := issue(s, op.interest, old.interest)
			if err := p.Reregister(s.evented(), tok, op.interest, op.opts); err != nil {
				fails.add("Reregister %s: %v", s.label, err)
			}
			now := clock.Add(1)
			ti.regAt.Store(now)
			old.retAt.Store(now)
			s.token = tok
		case 3: // Close (registrations only)
			if s.reg == nil {
				continue
			}
			if err := s.reg.Close(); err != nil {
				fails.add("Close %s: %v", s.label, err)
			}
			if s.registered {
				old.retAt.Store(clock.Add(1))
			}
			s.registered, s.closed = false, true
		}
	}
	// Let the consumer see the final state for a while, then stop it.
	time.Sleep(2 * time.Millisecond)
	close(stop)
	bg.Wait()
	totals.rounds.Add(int64(nops))
	// Liveness after the churn: every source still registered level
	// triggered and ready must be reported by a few calls; make the last
	// registration of each Level and ready first.
	want := map[poll.Token]string{}
	for _, s := range srcs {
		if !s.registered {
			continue
		}
		interest := lookup(s.token).interest
		if err := p.Reregister(s.evented(), s.token, interest, poll.Level); err != nil {
			fails.add("final Reregister %s: %v", s.label, err)
		}
		want[s.token] = s.label
	}
	ev := poll.NewEvents(8)
	for i := 0; i < 4 && len(want) > 0; i++ {
		if _, err := p.Poll(ev, 0); err != nil {
			fails.add("final Poll: %v", err)
		}
		for e := range ev.All() {
			delete(want, e.Token)
		}
	}
	for tok, label := range want {
		fails.add("after the churn, %s (token %d, Level, ready) was not reported (rules 3, 5)", label, tok)
	}
	fails.report(t)
}
