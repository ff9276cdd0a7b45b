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
// Invariants:
//   - fd is a valid, open descriptor owned by this sock exactly while closed
//     is false; both change only under mu held for writing, and only in
//     close, which sets fd to -1 after the descriptor is closed.
//   - Every use of fd takes mu, for reading (I/O, socket options) or for
//     writing (registration, Close), and checks closed first. So Close
//     waits for I/O in progress to finish, and nothing uses the number once
//     Close has released it to the kernel for reuse. I/O never blocks, so
//     the wait is short.
//   - poll is the Poll the descriptor is registered with through this sock,
//     or nil; guarded by mu held for writing. Close deregisters it before
//     closing the descriptor, so the Poll's table never keeps a number the
//     kernel may reuse.
//
// An RWMutex keeps Read and Write on different goroutines from serialising
// each other; the read lock is one atomic add on the fast path.
type sock struct {
	mu     sync.RWMutex
	fd     int
	closed bool
	poll   *poll.Poll
}

func newSock(fd int) sock { return sock{fd: fd} }

// rlock takes the read lock and reports ErrClosed (wrapped with op) if the
// socket is closed, in which case the lock is not held.
func (s *sock) rlock(op string) error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return closedError(op)
	}
	return nil
}

// lock is rlock for writers.
func (s *sock) lock(op string) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return closedError(op)
	}
	return nil
}

// sysfd returns the descriptor number, or -1 once closed.
func (s *sock) sysfd() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
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
	if p := s.poll; p != nil {
		s.poll = nil
		if err := p.Deregister(poll.Fd(s.fd)); err != nil &&
			!errors.Is(err, poll.ErrNotRegistered) && !errors.Is(err, poll.ErrClosed) {
			derr = opError("close: deregister", "", err)
		}
	}
	// close is not retried on EINTR: the descriptor is released even then,
	// and a retry could close a number another goroutine has just opened.
	cerr := unix.Close(s.fd)
	s.fd, s.closed = -1, true
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
	if s.poll != nil && s.poll != p {
		// Close can undo only one registration; see the package doc.
		return fmt.Errorf("socket: register: %w", poll.ErrRegisteredElsewhere)
	}
	if err := poll.Fd(s.fd).Register(p, t, interest, opts); err != nil {
		return err
	}
	s.poll = p
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
	return poll.Fd(s.fd).Reregister(p, t, interest, opts)
}

// deregister implements poll.Evented.Deregister. The remembered Poll is
// forgotten also when p reports it is closed, so that the socket can then
// be registered with another Poll.
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
		s.poll = nil
	}
	return err
}

// checkPoll reports whether this sock is registered with p.
func (s *sock) checkPoll(op string, p *poll.Poll) error {
	if p == nil {
		return fmt.Errorf("socket: %s: nil Poll: %w", op, poll.ErrInvalidArgument)
	}
	switch s.poll {
	case p:
		return nil
	case nil:
		return fmt.Errorf("socket: %s: %w", op, poll.ErrNotRegistered)
	default:
		return fmt.Errorf("socket: %s: %w", op, poll.ErrRegisteredElsewhere)
	}
}
