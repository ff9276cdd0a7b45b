package netloop

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/poll"
)

// loopState is what netloop keeps per Loop, in the Loop's Value under
// stateKey: made with the Loop's first Conn (or its first Shutdown), gone
// with the Loop.
//
// Invariants (mu guards live, draining, waiters and every Conn's listed):
//
//  1. A Conn is in live from the end of its Add until its removal: Add
//     enlists it once the Loop has given it its token (so that Async,
//     which a drain uses, can reach it), and removal delists it. A Conn
//     removed before Add enlisted it (its first call failed, on another
//     worker) is marked so, and is never enlisted.
//  2. draining, once set, stays set. A drain takes its snapshot of live
//     and sets draining under one hold of mu, so every Conn is either in
//     the snapshot or enlisted after, and then drains itself (enlist
//     returns true): none is missed, none drained twice by one drain.
//  3. Conns are touched only through Conn.Async, from here: the Conn's
//     own calls act on it, also on a Loop with several workers.
type loopState struct {
	conns atomic.Int64              // Conns on the Loop: added, not yet closed (read without mu)
	cfgs  [4]atomic.Pointer[Config] // the Configs intern gave out last (read without mu)
	cfgAt atomic.Uint32             // where intern puts the next one
	hs    handshakes                // the TLS handshakes' goroutines (tls_handshake.go), under its own mu

	mu       sync.Mutex
	live     map[*Conn]struct{}
	draining bool
	waiters  []chan struct{} // Shutdowns waiting for live to empty

	// The end of the drain: its result, decided once (by the first
	// Shutdown to force the drain, or to see it over), and finished,
	// closed once a Shutdown has stopped the Loop.
	finishErr  error // set by decideOnce, before finished is closed
	decideOnce sync.Once
	finished   chan struct{}
	finishOnce sync.Once
}

// Values of Conn.listed.
const (
	notListed int8 = iota // Add has not enlisted it yet
	listed                // in live
	delisted              // removed: never (again) in live
)

// intern returns a Config equal to cfg for a Conn to keep: one of the
// last few it gave out if one is equal, as one almost always is (a server
// adds its Conns with one Config, a proxy with two), else cfg, which
// takes the place of the oldest. Conns share it, so none changes it: a
// Conn copies it first (applyTimeouts).
func (s *loopState) intern(cfg Config) *Config {
	for i := range s.cfgs {
		if p := s.cfgs[i].Load(); p != nil && *p == cfg {
			return p
		}
	}
	p := new(Config) // not &cfg, which would put cfg on the heap at every call
	*p = cfg
	s.cfgs[s.cfgAt.Add(1)%uint32(len(s.cfgs))].Store(p)
	return p
}

type stateKey struct{}

func newLoopState() any {
	return &loopState{live: make(map[*Conn]struct{}), finished: make(chan struct{})}
}

// stateOf returns l's loopState. l is a Loop made with eventloop.New.
func stateOf(l *eventloop.Loop) *loopState {
	return l.Value(stateKey{}, newLoopState).(*loopState)
}

// enlist puts c in live (invariant 1) and reports whether a drain is in
// progress, which c must then join.
func (s *loopState) enlist(c *Conn) (drain bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.listed != notListed {
		return false
	}
	c.listed = listed
	s.live[c] = struct{}{}
	return s.draining
}

// delist takes c out of live at its removal, and wakes the waiting
// Shutdowns when that empties it during a drain.
func (s *loopState) delist(c *Conn) {
	s.conns.Add(-1)
	s.mu.Lock()
	defer s.mu.Unlock()
	c.listed = delisted
	delete(s.live, c)
	if len(s.live) == 0 && s.draining {
		for _, w := range s.waiters {
			select {
			case w <- struct{}{}:
			default: // a wake-up is already pending
			}
		}
	}
}

// beginDrain starts the drain on this Loop: every Conn hears of it in its
// own call (Conn.drain). It reports the Conns it told, and false if a
// drain had begun before (invariant 2: each Conn is told once).
func (s *loopState) beginDrain() (n int, first bool) {
	s.mu.Lock()
	if s.draining {
		s.mu.Unlock()
		return 0, false
	}
	s.draining = true
	conns := s.snapshotLocked()
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.Async((*Conn).drain) // ErrClosed: it closed meanwhile, nothing to drain
	}
	return len(conns), true
}

// abortAll ends every Conn left, dropping its output, with err; it
// returns how many it ended.
func (s *loopState) abortAll(err error) int {
	s.mu.Lock()
	conns := s.snapshotLocked()
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.Async(func(c *Conn) { c.Abort(err) })
	}
	return len(conns)
}

func (s *loopState) snapshotLocked() []*Conn {
	conns := make([]*Conn, 0, len(s.live))
	for c := range s.live {
		conns = append(conns, c)
	}
	return conns
}

// decide records the drain's result, unless it was decided before.
func (s *loopState) decide(err error) { s.decideOnce.Do(func() { s.finishErr = err }) }

// finish decides the result (if not yet), and says the drain is over.
func (s *loopState) finish(err error) {
	s.decide(err)
	s.finishOnce.Do(func() { close(s.finished) })
}

// watch adds w to the channels woken when live empties; the returned
// function takes it off again.
func (s *loopState) watch(w chan struct{}) (unwatch func()) {
	s.mu.Lock()
	s.waiters = append(s.waiters, w)
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, x := range s.waiters {
			if x == w {
				s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
				return
			}
		}
	}
}

// Conns is the number of Conns on l (added and not yet closed); 0 for a
// nil or zero Loop.
func Conns(l *eventloop.Loop) int {
	if l == nil {
		return 0
	}
	s, _ := l.Value(stateKey{}, nil).(*loopState)
	if s == nil {
		return 0
	}
	return int(s.conns.Load())
}

// ignoreClosed drops the errors that mean "already gone": closing or
// deregistering something closed, or not registered.
func ignoreClosed(err error) error {
	if err == nil || errors.Is(err, poll.ErrClosed) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, poll.ErrNotRegistered) {
		return nil
	}
	return err
}
