//go:build unix

package socket

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/poll"
)

// sock is the descriptor and its guard, shared by every socket type.
//
// A sock is notOpen, open or closed. notOpen is the zero value, so the zero
// value of every socket type is a socket that was never opened; a nil *sock
// (what a nil socket pointer hands its methods, see sockOf) is notOpen too,
// and every method below accepts one.
//
// Invariants:
//  1. fd is a valid, open descriptor owned by this sock exactly while state
//     is open. Only newSock makes an open sock, and state leaves open only
//     in close, under mu held for writing, which sets fd to -1 once the
//     descriptor is closed. So a zero value never uses its fd field, 0,
//     which is stdin.
//  2. Every use of fd takes mu, for reading (I/O, socket options,
//     ending a pass) or for writing (registration, Close), and checks state
//     first. So Close waits for I/O in progress to finish, and nothing uses
//     the number once Close has released it to the kernel for reuse. I/O
//     never blocks, so the wait is short.
//  3. poll is the Poll the descriptor is registered with through this sock,
//     or nil; edge says that registration is Edge (and is false while poll
//     is nil). Both are written with mu held for writing and read with mu
//     held either way, so the I/O paths read them under the read lock they
//     already hold.
//  4. A closed Poll holds nothing (Poll.Close forgets every descriptor). A
//     registration call that finds poll closed forgets it, so the socket can
//     go to another Poll at once, and close does not deregister from it.
//  5. Under an Edge registration, an I/O call that ends a pass (EAGAIN, or a
//     short read on a stream) ends that direction's pass with
//     poll.Fd.Drained before it releases the read lock, with the fd and poll it used for
//     the I/O (2, 3). A backend that emulates edge (poll(2)) may leave a
//     reported condition out of its poll set until then, so that an edge
//     is reported once and, when the caller follows the rule in the package
//     doc, never lost. Costs: one branch on a field the read lock already
//     covers; the call itself only when a pass ends.
//
// Lock order: mu, then the Poll's own locks (register, Close's deregister
// and Drained call into the Poll with mu held; the Poll never calls back
// into a socket).
//
// An RWMutex keeps Read and Write on different goroutines from serialising
// each other; the read lock is one atomic add on the fast path.
type sock struct {
	mu    sync.RWMutex
	fd    int
	state sockState
	poll  *poll.Poll
	edge  bool
}

// sockState is where a sock is in its life; see sock.
type sockState uint8

const (
	notOpen sockState = iota // the zero value: never opened
	open
	closed
)

func newSock(fd int) sock { return sock{fd: fd, state: open} }

// stateErr is the error of op on a sock that is not open. Called with mu
// held, or on a nil sock.
func (s *sock) stateErr(op string) error {
	if s == nil || s.state == notOpen {
		return notOpenError(op)
	}
	return closedError(op)
}

// rlock takes the read lock and reports, wrapped with op, why the socket
// cannot be used if it is not open, in which case the lock is not held.
func (s *sock) rlock(op string) error {
	if s == nil {
		return notOpenError(op)
	}
	s.mu.RLock()
	if s.state != open {
		err := s.stateErr(op)
		s.mu.RUnlock()
		return err
	}
	return nil
}

// lock is rlock for writers.
func (s *sock) lock(op string) error {
	if s == nil {
		return notOpenError(op)
	}
	s.mu.Lock()
	if s.state != open {
		err := s.stateErr(op)
		s.mu.Unlock()
		return err
	}
	return nil
}

// sysfd returns the descriptor number, or -1 unless the sock is open.
func (s *sock) sysfd() int {
	if s == nil {
		return -1
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.state != open {
		return -1
	}
	return s.fd
}

// close deregisters and closes the descriptor. The deregistration errors
// that mean "nothing to undo" (the caller already deregistered, or closed
// the Poll) are ignored; any other is reported, but the descriptor is closed
// either way so that Close never leaks it.
func (s *sock) close() error {
	if err := s.lock("close"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	var derr error
	if p := s.poll; p != nil && !p.Closed() { // invariant 4
		if err := p.Deregister(poll.Fd(s.fd)); err != nil &&
			!errors.Is(err, poll.ErrNotRegistered) && !errors.Is(err, poll.ErrClosed) {
			derr = opError("close: deregister", "", err)
		}
	}
	s.poll, s.edge = nil, false
	// close is not retried on EINTR: the descriptor is released even then,
	// and a retry could close a number another goroutine has just opened.
	cerr := unix.Close(s.fd)
	s.fd, s.state = -1, closed
	if cerr != nil {
		cerr = os.NewSyscallError("close", cerr)
	}
	return errors.Join(derr, cerr)
}

// register implements poll.Evented.Register and remembers p for Close.
func (s *sock) register(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	if err := s.lock("register"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if p == nil {
		return fmt.Errorf("socket: register: nil Poll: %w", poll.ErrInvalidArgument)
	}
	s.forgetClosedPoll()
	if s.poll != nil && s.poll != p {
		// Close can undo only one registration; see the package doc.
		return fmt.Errorf("socket: register: %w", poll.ErrRegisteredElsewhere)
	}
	if err := poll.Fd(s.fd).Register(p, t, interest, opts); err != nil {
		return err
	}
	// Register validated opts: the zero PollOpt is Level.
	s.poll, s.edge = p, opts.IsEdge()
	return nil
}

// reregister implements poll.Evented.Reregister.
func (s *sock) reregister(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	if err := s.lock("reregister"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if err := s.checkPoll("reregister", p); err != nil {
		return err
	}
	if err := poll.Fd(s.fd).Reregister(p, t, interest, opts); err != nil {
		return err
	}
	s.edge = opts.IsEdge()
	return nil
}

// deregister implements poll.Evented.Deregister. The remembered Poll is
// forgotten also when p reports it is closed or does not know the
// descriptor, so that the socket can then be registered elsewhere.
func (s *sock) deregister(p *poll.Poll) error {
	if err := s.lock("deregister"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if err := s.checkPoll("deregister", p); err != nil {
		return err
	}
	err := poll.Fd(s.fd).Deregister(p)
	if err == nil || errors.Is(err, poll.ErrClosed) || errors.Is(err, poll.ErrNotRegistered) {
		s.poll, s.edge = nil, false
	}
	return err
}

// checkPoll reports whether this sock is registered with p. The call is
// passed on to p when it is the remembered Poll, even a closed one, so that
// the caller hears poll.ErrClosed from it; any other closed Poll is
// forgotten first (invariant 4). Called with mu held for writing.
func (s *sock) checkPoll(op string, p *poll.Poll) error {
	if p == nil {
		return fmt.Errorf("socket: %s: nil Poll: %w", op, poll.ErrInvalidArgument)
	}
	if s.poll == p {
		return nil
	}
	s.forgetClosedPoll()
	if s.poll == nil {
		return fmt.Errorf("socket: %s: %w", op, poll.ErrNotRegistered)
	}
	return fmt.Errorf("socket: %s: %w", op, poll.ErrRegisteredElsewhere)
}

// forgetClosedPoll drops the remembered Poll if it has been closed
// (invariant 4). Called with mu held for writing.
func (s *sock) forgetClosedPoll() {
	if s.poll.Closed() {
		s.poll, s.edge = nil, false
	}
}

// drained tells the Poll that an I/O call ended a pass in direction r of
// an Edge registration (invariant 5). Called with the read lock held, and
// only when s.edge is set. The failures that leave no pass to end are
// ignored: a Poll that has been closed, or one that no longer has the
// descriptor (the caller deregistered it as a raw Fd). Anything else is
// reported, since a pass left open could miss its next edge.
func (s *sock) drained(op string, r poll.Ready) error {
	err := poll.Fd(s.fd).Drained(s.poll, r)
	if err == nil || errors.Is(err, poll.ErrClosed) || errors.Is(err, poll.ErrNotRegistered) {
		return nil
	}
	return opError(op+": drained", "", err)
}
