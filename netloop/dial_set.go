package netloop

import (
	"sync"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/poll"
)

// dialSet holds a Loop's dials in progress, so that each ends with one
// call of its done also when the Loop closes first: a posted function or
// a timer is dropped by Close, and a dial that waits for its resolution
// has no source on the Loop. The set is one source of the Loop (a
// Registration that is never made ready), added with the Loop's first
// Dial and kept; when Close removes it, its Removed (the sweep) reports
// ErrClosed to every dial still in the set. Taking a dial out of the set
// is what entitles a caller to call its done (dial.go, invariant 1).
type dialSet struct {
	once   sync.Once
	addErr error // the sentinel's Loop.Add
	reg    *poll.Registration

	mu        sync.Mutex
	dials     map[*dial]struct{} // guarded by mu
	reporting int                // guarded by mu: dials taken out whose done has not returned
	closed    bool               // guarded by mu: swept, the Loop is closing
}

type dialsKey struct{}

// dialsOf returns l's dialSet.
func dialsOf(l *eventloop.Loop) *dialSet {
	return l.Value(dialsKey{}, func() any { return &dialSet{dials: map[*dial]struct{}{}} }).(*dialSet)
}

// add puts d in the set; ErrClosed once the Loop is closing.
func (s *dialSet) add(l *eventloop.Loop, d *dial) error {
	s.once.Do(func() {
		s.reg, _ = poll.NewRegistration()
		if _, s.addErr = l.Add(s.reg, poll.Readable, poll.Edge, (*dialSweep)(s)); s.addErr != nil {
			_ = s.reg.Close()
		}
	})
	if s.addErr != nil {
		return s.addErr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.dials[d] = struct{}{}
	return nil
}

// remove takes d out of the set and reports whether it was there; if it
// was, the caller calls d's done and then reported: until then the dial
// still counts as in flight (a drain must not end before its done runs).
func (s *dialSet) remove(d *dial) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.dials[d]
	if ok {
		delete(s.dials, d)
		s.reporting++
	}
	return ok
}

// reported: the done of a dial remove took out has returned.
func (s *dialSet) reported() {
	s.mu.Lock()
	s.reporting--
	s.mu.Unlock()
}

// inFlight is how many dials have not ended yet: a drain waits for them
// (drain.go), since a dial that connects brings a Conn to drain.
func (s *dialSet) inFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.dials) + s.reporting
}

// endAll ends every dial in flight with cause, on the Loop, as a cancelled
// ctx would: a drain cut short by its deadline does not wait for connects.
func (s *dialSet) endAll(cause error) {
	s.mu.Lock()
	dials := make([]*dial, 0, len(s.dials))
	for d := range s.dials {
		dials = append(dials, d)
	}
	s.mu.Unlock()
	for _, d := range dials {
		_ = d.l.Post(func(*eventloop.Loop) { d.step(func() error { return cause }) })
	}
}

// dialSweep is the set as the sentinel's handler.
type dialSweep dialSet

// Ready does nothing: the Registration is never made ready.
func (*dialSweep) Ready(*eventloop.Loop, poll.Event) eventloop.Action { return eventloop.Keep }

// Removed runs as the Loop closes: every dial still in the set ends with
// ErrClosed.
func (sw *dialSweep) Removed(*eventloop.Loop, poll.Token) {
	s := (*dialSet)(sw)
	_ = s.reg.Close()
	s.mu.Lock()
	s.closed = true
	dials := s.dials
	s.dials = nil
	s.mu.Unlock()
	for d := range dials {
		d.mu.Lock()
		if !d.ended {
			d.end()
		}
		d.mu.Unlock()
		d.done(nil, d.wrap(ErrClosed))
	}
}
