//go:build unix

// Package fdguard is the guard of a descriptor that a socket or a child's
// pipe owns: the descriptor, its state, the lock every use of it takes,
// and its registration with a Poll, kept so that Close can deregister
// first and an Edge pass can be ended. The socket package's sockets and
// the child package's pipes are Guards; each names its errors through a
// Namer.
//
// It sits above poll (it registers through poll.Fd), below the packages
// that own descriptors.
package fdguard

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/poll"
)

// Namer makes the errors of a Guard's owner: the owner's prefix, its
// sentinels. Its zero value names the errors of a nil or zero Guard.
type Namer interface {
	// NotOpen is the error of op on a Guard that was never opened.
	NotOpen(op string) error
	// Closed is the error of op on a closed Guard.
	Closed(op string) error
	// Wrap is the error of op that failed with err, an error of poll.
	Wrap(op string, err error) error
	// Sys is the error of op that failed with err, a system call's errno.
	Sys(op string, err error) error
}

// Guard is a descriptor and its guard. A Guard is notOpen, open or
// closed. notOpen is the zero value, so the zero value of an owner is one
// that was never opened; a nil *Guard (what a nil owner hands over) is
// notOpen too, and every method accepts one.
//
// Invariants:
//  1. fd is a valid, open descriptor owned by this Guard exactly while
//     state is open. Only Opened makes an open Guard, and state leaves
//     open only in Close, under mu held for writing, which sets fd to -1
//     once the descriptor is closed. So a zero value never uses its fd
//     field, 0, which is stdin.
//  2. Every use of fd takes mu, for reading (I/O, options, Drained; RLock)
//     or for writing (registration, Close), and checks state first. So
//     Close waits for I/O in progress to finish, and nothing uses the
//     number once Close has released it to the kernel for reuse. I/O never
//     blocks, so the wait is short.
//  3. p is the Poll the descriptor is registered with through this Guard,
//     or nil; edge says that registration is Edge (and is false while p is
//     nil). Both are written with mu held for writing and read with mu
//     held either way, so the I/O paths read them under the read lock they
//     already hold.
//  4. A closed Poll holds nothing (Poll.Close forgets every descriptor). A
//     registration call that finds p closed forgets it, so the descriptor
//     can go to another Poll at once, and Close does not deregister from
//     it.
//  5. Under an Edge registration, an I/O call that ends a pass (EAGAIN, or
//     a short read on a stream) ends that direction's pass with Drained
//     before it releases the read lock, with the fd and Poll it used for
//     the I/O (2, 3). A backend that emulates edge (poll(2)) may leave a
//     reported condition out of its poll set until then, so that an edge
//     is reported once and, when the caller follows the rule under
//     poll.Edge, never lost. Costs: one branch on a field the read lock
//     already covers; the call itself only when a pass ends.
//  6. stream is the poll.Stream a RegisterStream obtained (the Poll's
//     backend does the descriptor's I/O), or nil. Once set it stays until
//     Close: after Deregister it still holds bytes received before, and
//     falls back to the descriptor itself when it has none (poll.Stream),
//     so every read and write goes through it for the descriptor's life,
//     and a later registration is a plain one. Written with mu held for
//     writing, read with mu held either way, like p (3).
//
// Lock order: mu, then the Poll's own locks (register, Close's deregister
// and Drained call into the Poll with mu held; the Poll never calls back
// into a Guard).
//
// An RWMutex keeps reads and writes on different goroutines from
// serialising each other; the read lock is one atomic add on the fast
// path.
type Guard[N Namer] struct {
	name   N
	mu     sync.RWMutex
	fd     int
	state  state
	p      *poll.Poll
	edge   bool
	stream poll.Stream
}

// state is where a Guard is in its life; see Guard.
type state uint8

const (
	notOpen state = iota // the zero value: never opened
	open
	closed
)

// Opened returns an open Guard that owns fd, its errors named by name.
func Opened[N Namer](fd int, name N) Guard[N] { return Guard[N]{name: name, fd: fd, state: open} }

// Name returns the Namer, the zero N for a nil Guard. It never changes.
func (g *Guard[N]) Name() N {
	if g == nil {
		var zero N
		return zero
	}
	return g.name
}

// stateErr is the error of op on a Guard that is not open. Called with mu
// held, or on a nil Guard.
func (g *Guard[N]) stateErr(op string) error {
	if g == nil {
		var zero N
		return zero.NotOpen(op)
	}
	if g.state == notOpen {
		return g.name.NotOpen(op)
	}
	return g.name.Closed(op)
}

// RLock takes the read lock and reports, wrapped with op, why the
// descriptor cannot be used if it is not open, in which case the lock is
// not held.
func (g *Guard[N]) RLock(op string) error {
	if g == nil {
		return g.stateErr(op)
	}
	g.mu.RLock()
	if g.state != open {
		err := g.stateErr(op)
		g.mu.RUnlock()
		return err
	}
	return nil
}

// RUnlock releases the read lock RLock took.
func (g *Guard[N]) RUnlock() { g.mu.RUnlock() }

// lock is RLock for writers.
func (g *Guard[N]) lock(op string) error {
	if g == nil {
		return g.stateErr(op)
	}
	g.mu.Lock()
	if g.state != open {
		err := g.stateErr(op)
		g.mu.Unlock()
		return err
	}
	return nil
}

// Fd returns the descriptor. Call it with the lock RLock took.
func (g *Guard[N]) Fd() int { return g.fd }

// Edge reports whether the descriptor is registered Edge, so that an I/O
// call that ends a pass must call Drained. Call it with the lock RLock
// took.
func (g *Guard[N]) Edge() bool { return g.edge }

// Sysfd returns the descriptor number, or -1 unless the Guard is open.
func (g *Guard[N]) Sysfd() int {
	if g.RLock("fd") != nil {
		return -1
	}
	defer g.mu.RUnlock()
	return g.fd
}

// Drained ends the pass in direction r of an Edge registration after an
// I/O call ended it (invariant 5). Call it with the lock RLock took, and
// only when Edge is true. The failures that leave no pass to end are
// ignored: a Poll that has been closed, or one that no longer has the
// descriptor (the caller deregistered it as a raw Fd). Anything else is
// reported, wrapped with op, since a pass left open could miss its next
// edge.
func (g *Guard[N]) Drained(op string, r poll.Ready) error {
	err := poll.Fd(g.fd).Drained(g.p, r)
	if err == nil || errors.Is(err, poll.ErrClosed) || errors.Is(err, poll.ErrNotRegistered) {
		return nil
	}
	return g.name.Wrap(op+": drained", err)
}

// Close deregisters and closes the descriptor. The deregistration errors
// that mean "nothing to undo" (the caller already deregistered, or closed
// the Poll) are ignored; any other is reported, but the descriptor is
// closed either way so that Close never leaks it.
func (g *Guard[N]) Close() error {
	if err := g.lock("close"); err != nil {
		return err
	}
	defer g.mu.Unlock()
	var derr error
	if p := g.p; p != nil && !p.Closed() { // invariant 4
		if err := p.Deregister(poll.Fd(g.fd)); err != nil &&
			!errors.Is(err, poll.ErrNotRegistered) && !errors.Is(err, poll.ErrClosed) {
			derr = g.name.Wrap("close: deregister", err)
		}
	}
	g.p, g.edge, g.stream = nil, false, nil
	// close is not retried on EINTR: the descriptor is released even then,
	// and a retry could close a number another goroutine has just opened.
	cerr := unix.Close(g.fd)
	g.fd, g.state = -1, closed
	if cerr != nil {
		cerr = g.name.Sys("close", cerr)
	}
	return errors.Join(derr, cerr)
}

// Register implements poll.Evented.Register and remembers p for Close.
func (g *Guard[N]) Register(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	return g.register(p, t, interest, opts, false)
}

// RegisterStream is Register for a connected stream socket: when p's
// backend does stream I/O itself, the Guard keeps the Stream it returns
// (invariant 6) and Stream hands it to the I/O paths.
func (g *Guard[N]) RegisterStream(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	return g.register(p, t, interest, opts, true)
}

// register is Register, asking for a Stream when stream is set and the
// Guard has none yet (one Stream per descriptor life: invariant 6).
func (g *Guard[N]) register(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt, stream bool) error {
	if err := g.lock("register"); err != nil {
		return err
	}
	defer g.mu.Unlock()
	if p == nil {
		return g.name.Wrap("register", errNilPoll)
	}
	g.forgetClosedPoll()
	if g.p != nil && g.p != p {
		// Close can undo only one registration.
		return g.name.Wrap("register", poll.ErrRegisteredElsewhere)
	}
	if stream && g.stream == nil {
		st, err := poll.Fd(g.fd).RegisterStream(p, t, interest, opts)
		if err != nil {
			return err
		}
		g.stream = st
	} else if err := poll.Fd(g.fd).Register(p, t, interest, opts); err != nil {
		return err
	}
	// Register validated opts: the zero PollOpt is Level.
	g.p, g.edge = p, opts.IsEdge()
	return nil
}

// HasStream reports whether the descriptor's I/O goes through a Stream
// (invariant 6).
func (g *Guard[N]) HasStream() bool {
	if g.RLock("stream") != nil {
		return false
	}
	defer g.mu.RUnlock()
	return g.stream != nil
}

// Stream returns the Stream the descriptor's I/O goes through, or nil for
// the descriptor itself. Call it with the lock RLock took.
func (g *Guard[N]) Stream() poll.Stream { return g.stream }

// Reregister implements poll.Evented.Reregister.
func (g *Guard[N]) Reregister(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	if err := g.lock("reregister"); err != nil {
		return err
	}
	defer g.mu.Unlock()
	if err := g.checkPoll("reregister", p); err != nil {
		return err
	}
	if err := poll.Fd(g.fd).Reregister(p, t, interest, opts); err != nil {
		return err
	}
	g.edge = opts.IsEdge()
	return nil
}

// Deregister implements poll.Evented.Deregister. The remembered Poll is
// forgotten also when p reports it is closed or does not know the
// descriptor, so that the descriptor can then be registered elsewhere.
func (g *Guard[N]) Deregister(p *poll.Poll) error {
	if err := g.lock("deregister"); err != nil {
		return err
	}
	defer g.mu.Unlock()
	if err := g.checkPoll("deregister", p); err != nil {
		return err
	}
	err := poll.Fd(g.fd).Deregister(p)
	if err == nil || errors.Is(err, poll.ErrClosed) || errors.Is(err, poll.ErrNotRegistered) {
		g.p, g.edge = nil, false
	}
	return err
}

var errNilPoll = fmt.Errorf("nil Poll: %w", poll.ErrInvalidArgument)

// checkPoll reports whether this Guard is registered with p. The call is
// passed on to p when it is the remembered Poll, even a closed one, so
// that the caller hears poll.ErrClosed from it; any other closed Poll is
// forgotten first (invariant 4). Called with mu held for writing.
func (g *Guard[N]) checkPoll(op string, p *poll.Poll) error {
	if p == nil {
		return g.name.Wrap(op, errNilPoll)
	}
	if g.p == p {
		return nil
	}
	g.forgetClosedPoll()
	if g.p == nil {
		return g.name.Wrap(op, poll.ErrNotRegistered)
	}
	return g.name.Wrap(op, poll.ErrRegisteredElsewhere)
}

// forgetClosedPoll drops the remembered Poll if it has been closed
// (invariant 4). Called with mu held for writing.
func (g *Guard[N]) forgetClosedPoll() {
	if g.p.Closed() {
		g.p, g.edge = nil, false
	}
}
