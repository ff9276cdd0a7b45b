package poll

import (
	"sync"
	"sync/atomic"
)

// Registration is a user-space source of readiness: an Evented with no
// descriptor behind it, made ready by its SetReadiness from any goroutine.
// The channel and signal packages' sources are built on it, and so is
// TimerQueue.
//
// The zero Registration (and a nil one) is not usable: its methods return
// an error wrapping ErrInvalidArgument. Make one with NewRegistration.
//
// A Registration is bound to the first Poll it is registered with; it may be
// deregistered and registered again with that Poll, but not with another.
// Close it when done: that is what frees it from the Poll.
type Registration struct{ n *regNode }

// SetReadiness is the producer side of a Registration. It is safe for
// concurrent use by any number of goroutines, and it may be used before the
// Registration is registered: readiness set then is reported once it is.
// The zero SetReadiness is not usable, as the zero Registration.
type SetReadiness struct{ n *regNode }

type regNode struct {
	state  atomic.Uint64
	tokens [3]atomic.Uint64        // see stTokWriteShift
	next   atomic.Pointer[regNode] // queue link
	poll   atomic.Pointer[Poll]    // bound at first Register, never changes

	mu sync.Mutex // serialises Register, Reregister, Deregister and Close

	epoch  uint64 // consumer: the pass (Poll.epoch) that last reported this node
	idle   uint8  // consumer: passes in a row it was held with nothing to report
	looked uint64 // consumer: the last pass that counted it idle

	// Delayed readiness (delay.go): guarded by the wheel's mutex, but for
	// hasDelay, which UnsetReadiness reads without it.
	delayID  wheelID // the pending delay's wheel entry, if any
	delayed  Ready   // what to set when it fires
	hasDelay atomic.Bool
}

// NewRegistration returns a Registration and its SetReadiness.
func NewRegistration() (*Registration, *SetReadiness) {
	n := &regNode{}
	return &Registration{n}, &SetReadiness{n}
}

// Register implements Evented.
func (r *Registration) Register(p *Poll, t Token, interest Ready, opts PollOpt) error {
	if err := p.check(); err != nil {
		return err
	}
	opts, err := validate(t, interest, opts)
	if err != nil {
		return err
	}
	n, err := r.node()
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.state.Load()&stDropped != 0 {
		return ErrClosed
	}
	if p.closed.Load() {
		return ErrClosed
	}
	if !n.poll.CompareAndSwap(nil, p) && n.poll.Load() != p {
		return ErrRegisteredElsewhere
	}
	if n.state.Load()&stRegistered != 0 {
		return wrapf(ErrAlreadyRegistered, "registration")
	}
	p.tokenRegistered(tokenSource{node: n}, t)
	return n.arm(p, t, interest, opts)
}

// Reregister implements Evented.
func (r *Registration) Reregister(p *Poll, t Token, interest Ready, opts PollOpt) error {
	if err := p.check(); err != nil {
		return err
	}
	opts, err := validate(t, interest, opts)
	if err != nil {
		return err
	}
	n, err := r.node()
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.checkBound(p); err != nil {
		return err
	}
	p.tokenRegistered(tokenSource{node: n}, t)
	return n.arm(p, t, interest, opts)
}

// Deregister implements Evented. Readiness is kept and reported again if the
// Registration is registered again.
func (r *Registration) Deregister(p *Poll) error {
	if err := p.check(); err != nil {
		return err
	}
	n, err := r.node()
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.checkBound(p); err != nil {
		return err
	}
	p.tokenDeregistered(tokenSource{node: n})
	for {
		old := n.state.Load()
		if n.state.CompareAndSwap(old, stWithInterest(old, 0, 0)&^stRegistered) {
			return nil
		}
	}
}

// Close drops the Registration: once it returns, no Poll
// call started afterwards reports it, its pending delayed readiness is
// cancelled, and later SetReadiness calls do nothing and return ErrClosed.
// Closing twice returns ErrClosed.
func (r *Registration) Close() error {
	n, err := r.node()
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for {
		old := n.state.Load()
		if old&stDropped != 0 {
			return ErrClosed
		}
		if n.state.CompareAndSwap(old, stWithInterest(old, 0, 0)&^stRegistered|stDropped) {
			break
		}
	}
	if p := n.poll.Load(); p != nil {
		p.wheel.cancelDelay(n)
		p.tokenDeregistered(tokenSource{node: n})
	}
	return nil
}

var errNilRegistration = wrapf(ErrInvalidArgument, "nil Registration or SetReadiness (use NewRegistration)")

func (r *Registration) node() (*regNode, error) {
	if r == nil || r.n == nil {
		return nil, errNilRegistration
	}
	return r.n, nil
}

func (s *SetReadiness) node() (*regNode, error) {
	if s == nil || s.n == nil {
		return nil, errNilRegistration
	}
	return s.n, nil
}

func (n *regNode) checkBound(p *Poll) error {
	if n.state.Load()&stDropped != 0 {
		return ErrClosed
	}
	if p.closed.Load() {
		return ErrClosed
	}
	switch n.poll.Load() {
	case p:
		if n.state.Load()&stRegistered == 0 {
			return wrapf(ErrNotRegistered, "registration")
		}
		return nil
	case nil:
		return wrapf(ErrNotRegistered, "registration")
	default:
		return ErrRegisteredElsewhere
	}
}

// arm installs token, interest and mode, and queues the node if it is
// already ready for the new interest (rule 5). The token goes into a free
// slot before the CAS that publishes it together with the interest. Callers
// hold n.mu, so only the consumer changes the state's read slot meanwhile,
// and it only ever moves it to the current write slot, never to ours.
func (n *regNode) arm(p *Poll, t Token, interest Ready, opts PollOpt) error {
	slot := freeTokenSlot(n.state.Load())
	n.tokens[slot].Store(uint64(t))
	for {
		old := n.state.Load()
		s := stWithInterest(old, interest, opts) | stRegistered
		s = s&^(stTokMask<<stTokWriteShift) | slot<<stTokWriteShift
		s &^= stOwed
		if stPending(s) != 0 {
			s |= stOwed
		}
		enqueue := s&stQueued == 0 && s&stOwed != 0
		if enqueue {
			s |= stQueued
		}
		if n.state.CompareAndSwap(old, s) {
			if enqueue {
				return p.queue.push(n)
			}
			return nil
		}
	}
}

// SetReadiness adds r to the readiness of the Registration. If that makes it
// ready for its interest, it is reported by a later Poll call, and a Poll
// blocked in another goroutine wakes up. In edge mode each call that sets a
// bit of the interest is a new edge, even if the bit was already set.
func (s *SetReadiness) SetReadiness(r Ready) error {
	// The checks are written out here and in UnsetReadiness, Register and
	// Reregister rather than shared: a helper that returns the node is too
	// big to inline, and this is the path of every notification.
	if r&^allReady != 0 {
		return wrapf(ErrInvalidArgument, "readiness %s", r)
	}
	n, err := s.node()
	if err != nil {
		return err
	}
	return n.set(r)
}

func (n *regNode) set(r Ready) error {
	for {
		old := n.state.Load()
		if old&stDropped != 0 {
			return ErrClosed
		}
		if p := n.poll.Load(); p != nil && p.queue.closed.Load() {
			return ErrClosed
		}
		s := old | uint64(r)<<stReadyShift
		// Only bits of the interest make an edge.
		if old&stRegistered != 0 && r&stInterest(old) != 0 {
			s |= stOwed
		}
		enqueue := old&stQueued == 0 && s&stOwed != 0
		if enqueue {
			s |= stQueued
		}
		if s == old {
			return nil // already set and already queued: the common fast path
		}
		if n.state.CompareAndSwap(old, s) {
			if enqueue {
				return n.poll.Load().queue.push(n)
			}
			return nil
		}
	}
}

// UnsetReadiness clears r from the readiness, and cancels r in a pending
// DelayReadiness.
func (s *SetReadiness) UnsetReadiness(r Ready) error {
	if r&^allReady != 0 {
		return wrapf(ErrInvalidArgument, "readiness %s", r)
	}
	n, err := s.node()
	if err != nil {
		return err
	}
	if n.hasDelay.Load() {
		if p := n.poll.Load(); p != nil {
			p.wheel.unsetDelayed(n, r)
		}
	}
	return n.unset(r)
}

// unset clears r from the readiness, and nothing else.
func (n *regNode) unset(r Ready) error {
	for {
		old := n.state.Load()
		if old&stDropped != 0 {
			return ErrClosed
		}
		s := old &^ (uint64(r) << stReadyShift)
		if s == old || n.state.CompareAndSwap(old, s) {
			return nil
		}
	}
}

// Readiness returns the current readiness (not masked by interest).
func (s *SetReadiness) Readiness() Ready {
	n, err := s.node()
	if err != nil {
		return 0
	}
	return stReady(n.state.Load())
}
