// Package ureg is a user-space readiness source for the library's own
// Evented types (signal and child Watchers): a poll.Registration that may
// move to another Poll once it is deregistered, or once its Poll is closed.
//
// A poll.Registration is bound to the first Poll it is registered with.
// A Watcher is a longer-lived thing than one registration, so Reg replaces
// its Registration when it is registered with a different Poll, carrying
// the readiness over: registering it with the new Poll then reports it at
// once if it is ready (rule 5), exactly as registering the old one again
// would have.
//
// Invariants:
//
//	U1. mu guards every field, and every call on reg and set is made with
//	    mu held, so a readiness change never lands on a Registration that is
//	    being replaced: it lands on the old one before the copy, or on the
//	    new one.
//	U2. on is the Poll reg is registered with, or nil. A Register with
//	    another Poll is refused with poll.ErrRegisteredElsewhere while on is
//	    set and not closed.
//	U3. bound is the Poll reg is bound to (its first Register), or nil. reg
//	    is replaced only when a Register names a Poll other than bound,
//	    which by U2 happens only when reg is not registered with a live Poll.
package ureg

import (
	"fmt"
	"sync"

	"github.com/unipoll/unipoll/poll"
)

// Reg is a movable Registration. Its zero value is not usable: make one
// with New.
type Reg struct {
	mu     sync.Mutex
	reg    *poll.Registration
	set    *poll.SetReadiness
	on     *poll.Poll // U2
	bound  *poll.Poll // U3
	closed bool
}

// New returns a Reg with no readiness.
func New() *Reg {
	reg, set := poll.NewRegistration()
	return &Reg{reg: reg, set: set}
}

// Register registers the Reg with p. See U2 and U3.
func (r *Reg) Register(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.checkLocked(p, CheckRegister); err != nil {
		return err
	}
	if r.bound != nil && r.bound != p {
		rd := r.set.Readiness()
		_ = r.reg.Close()
		r.reg, r.set = poll.NewRegistration()
		if rd != 0 {
			_ = r.set.SetReadiness(rd)
		}
		r.bound, r.on = nil, nil
	}
	if err := r.reg.Register(p, t, interest, opts); err != nil {
		return err
	}
	r.bound, r.on = p, p
	return nil
}

// Reregister forwards to the Registration if it is registered with p.
func (r *Reg) Reregister(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.checkLocked(p, CheckOn); err != nil {
		return err
	}
	return r.reg.Reregister(p, t, interest, opts)
}

// Deregister forwards to the Registration if it is registered with p.
func (r *Reg) Deregister(p *poll.Poll) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.checkLocked(p, CheckOn); err != nil {
		return err
	}
	if err := r.reg.Deregister(p); err != nil {
		return err
	}
	r.on = nil
	return nil
}

// checkLocked, with r.mu held, refuses a call on a closed Reg, then one
// that rule (CheckRegister or CheckOn) refuses for p.
func (r *Reg) checkLocked(p *poll.Poll, rule func(on, p *poll.Poll) error) error {
	if r.closed {
		return poll.ErrClosed
	}
	return rule(r.on, p)
}

// Set adds rd to the readiness (poll.SetReadiness.SetReadiness). Errors
// (a closed Reg, or a closed Poll) are ignored: nobody can be told.
func (r *Reg) Set(rd poll.Ready) {
	r.mu.Lock()
	if !r.closed {
		_ = r.set.SetReadiness(rd)
	}
	r.mu.Unlock()
}

// Unset clears rd from the readiness.
func (r *Reg) Unset(rd poll.Ready) {
	r.mu.Lock()
	if !r.closed {
		_ = r.set.UnsetReadiness(rd)
	}
	r.mu.Unlock()
}

// Close closes the Registration: a Poll call started after it returns
// never reports it. A second Close returns poll.ErrClosed.
func (r *Reg) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return poll.ErrClosed
	}
	r.closed = true
	r.on = nil
	return r.reg.Close()
}

// CheckRegister is the rule for registering with p a source that is
// registered with on (nil if none): one live Poll at a time (U2).
func CheckRegister(on, p *poll.Poll) error {
	if p == nil {
		return fmt.Errorf("%w: nil Poll", poll.ErrInvalidArgument)
	}
	if on != nil && on != p && !on.Closed() {
		return poll.ErrRegisteredElsewhere
	}
	return nil
}

// CheckOn is the rule for reregistering with p, or deregistering from p, a
// source that is registered with on (nil if none).
func CheckOn(on, p *poll.Poll) error {
	switch {
	case p == nil:
		return fmt.Errorf("%w: nil Poll", poll.ErrInvalidArgument)
	case on == p:
		return nil
	case on != nil && !on.Closed():
		return poll.ErrRegisteredElsewhere
	case p.Closed():
		return poll.ErrClosed
	default:
		return fmt.Errorf("%w: not registered with this Poll", poll.ErrNotRegistered)
	}
}
