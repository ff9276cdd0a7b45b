//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package child

import (
	"github.com/unipoll/unipoll/internal/onpoll/ureg"
	"github.com/unipoll/unipoll/poll"
)

// fdEvented is the Evented part of a mechanism built on a descriptor that
// becomes readable at the exit (a pidfd, a private kqueue): registered with
// the Poll as a poll.Fd, with the same one-Poll-at-a-time rule as a
// Registration (internal/onpoll/ureg). The Watcher's mutex guards it.
//
// An exit is only ever Readable. A registration whose interest lacks
// Readable can never be reported, so its descriptor stays out of the
// selector (in is false) rather than being registered with an interest
// the descriptor never meets: a pidfd hangs up when its process is reaped,
// and epoll reports a hang-up whatever the interest, which would cost the
// Poll call a slot for an event it then drops.
type fdEvented struct {
	fd int
	on *poll.Poll // the Poll the Watcher is registered with, or nil
	in bool       // fd is in on's selector (the interest has Readable)
}

// kernelOpts is the mode the descriptor is registered with. An exit happens
// once, but the descriptor may have a second edge after it: a pidfd becomes
// readable and hung up anew when the owner reaps the process, and a private
// kqueue becomes readable anew when the Watcher has read the exit and set
// its latch (kqueue_bsd.go). The Watcher promises one event in edge mode,
// so an edge registration is made oneshot in the kernel: after its one
// event the descriptor is out of the selector's way, and a Reregister puts
// it back (reporting the exit again, rule 5). Level and oneshot
// registrations keep their own mode.
func kernelOpts(opts poll.PollOpt) poll.PollOpt {
	if opts.IsEdge() {
		return opts | poll.Oneshot
	}
	return opts
}

// validReady is every readiness bit the Poll knows (poll's allReady).
const validReady = poll.Readable | poll.Writable | poll.Error | poll.Hup | poll.Priority

// kernelInterest is what the descriptor is registered for: Readable, the
// only readiness an exit has, plus any bits the Poll does not know, so that
// it refuses them as it would for any descriptor.
func kernelInterest(interest poll.Ready) poll.Ready {
	return poll.Readable | interest&^validReady
}

// checkArgs refuses what the Poll would refuse, for a registration that
// does not reach the selector.
func checkArgs(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	// Registering a throwaway Registration runs the Poll's own checks of
	// the token, interest and mode without touching the selector.
	reg, _ := poll.NewRegistration()
	defer reg.Close()
	if err := p.Register(reg, t, interest, opts); err != nil {
		return err
	}
	return p.Deregister(reg)
}

func (e *fdEvented) register(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	if err := ureg.CheckRegister(e.on, p); err != nil {
		return err
	}
	if e.on == p {
		// Already registered with p, in the selector or not: refused
		// as poll.Fd would refuse the descriptor, bad arguments first.
		if err := checkArgs(p, t, interest, opts); err != nil {
			return err
		}
		return poll.ErrAlreadyRegistered
	}
	if interest&poll.Readable == 0 {
		if err := checkArgs(p, t, interest, opts); err != nil {
			return err
		}
		e.on, e.in = p, false
		return nil
	}
	if err := poll.Fd(e.fd).Register(p, t, kernelInterest(interest), kernelOpts(opts)); err != nil {
		return err
	}
	e.on, e.in = p, true
	return nil
}

func (e *fdEvented) reregister(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	if err := ureg.CheckOn(e.on, p); err != nil {
		return err
	}
	switch want := interest&poll.Readable != 0; {
	case want && e.in:
		return poll.Fd(e.fd).Reregister(p, t, kernelInterest(interest), kernelOpts(opts))
	case want:
		if err := poll.Fd(e.fd).Register(p, t, kernelInterest(interest), kernelOpts(opts)); err != nil {
			return err
		}
		e.in = true
		return nil
	default:
		if err := checkArgs(p, t, interest, opts); err != nil {
			return err
		}
		if e.in {
			if err := poll.Fd(e.fd).Deregister(p); err != nil {
				return err
			}
			e.in = false
		}
		return nil
	}
}

func (e *fdEvented) deregister(p *poll.Poll) error {
	if err := ureg.CheckOn(e.on, p); err != nil {
		return err
	}
	if e.in {
		if err := poll.Fd(e.fd).Deregister(p); err != nil {
			return err
		}
	}
	e.on, e.in = nil, false
	return nil
}

// release deregisters the descriptor before it is closed, as poll.Fd asks.
// A Poll closing meanwhile returns ErrClosed, and its table no longer has
// the descriptor either way.
func (e *fdEvented) release() {
	if e.in && !e.on.Closed() {
		_ = poll.Fd(e.fd).Deregister(e.on)
	}
	e.on, e.in = nil, false
}
