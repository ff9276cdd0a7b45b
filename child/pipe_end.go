//go:build unix

package child

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/poll"
)

// pipeEnd is this process's end of a pipe to or from a child's standard
// stream, and its guard: what PipeReader and PipeWriter share. It keeps the
// rules the socket package's sock keeps (socket/sock.go), for the same
// reasons:
//
//	P1. fd is an open descriptor owned by the pipeEnd exactly while state
//	    is open. Only open makes an open one, and state leaves open
//	    only in close, under mu held for writing. The zero value is
//	    notOpen and never uses its fd field (0, which is stdin).
//	P2. Every use of fd takes mu, for reading (Read, Write and the Drained
//	    call they make) or for writing (registration, Close), and checks state
//	    first. So Close waits for I/O in progress (which never blocks), and
//	    nothing uses the number once Close has given it back to the kernel.
//	P3. on is the Poll the descriptor is registered with through the pipe,
//	    or nil; edge says that registration is Edge. Both are written with
//	    mu held for writing and read with mu held either way.
//	P4. A closed Poll holds nothing: a registration call that finds on
//	    closed forgets it, and close does not deregister from it.
//	P5. Under Edge, an I/O call that ends a pass (EAGAIN, or a short read)
//	    ends that direction's pass with poll.Fd.Drained before it releases mu, so
//	    that a backend that emulates edges (poll(2)) reports each edge once
//	    and never loses one.
//
// Lock order: mu, then the Poll's own locks. The read lock lets a Read and a
// Close on other goroutines be checked against each other at the cost of
// one atomic add.
type pipeEnd struct {
	name  string // "stdout of pid 1234", for errors; set before the pipe is handed out
	mu    sync.RWMutex
	fd    int
	state pipeState
	on    *poll.Poll
	edge  bool
}

type pipeState uint8

const (
	pipeNotOpen pipeState = iota // the zero value
	pipeOpen
	pipeClosed
)

// open makes a zero pipeEnd an open one, before anyone else can see it.
func (e *pipeEnd) open(fd int, name string) { e.fd, e.name, e.state = fd, name, pipeOpen }

// errZeroPipe is the error of every method of a nil or zero pipe.
var errZeroPipe = fmt.Errorf("%w: nil or zero child pipe (child.Start makes them)", ErrInvalidArgument)

// pipeClosedError is the error of an operation on a closed pipe. It
// matches ErrClosed (poll.ErrClosed) and os.ErrClosed, so code written for
// an *os.File recognises it too.
type pipeClosedError struct{ name, op string }

func (e *pipeClosedError) Error() string {
	return "child: " + e.name + ": " + e.op + ": pipe closed"
}

// Is matches ErrClosed and os.ErrClosed.
func (e *pipeClosedError) Is(target error) bool { return target == ErrClosed || target == os.ErrClosed }

// lock takes mu for writing (or, with read, for reading) and returns an
// error, with mu not held, unless the pipe is open.
func (e *pipeEnd) lock(op string, read bool) error {
	if e == nil {
		return errZeroPipe
	}
	if read {
		e.mu.RLock()
	} else {
		e.mu.Lock()
	}
	if e.state == pipeOpen {
		return nil
	}
	state := e.state
	if read {
		e.mu.RUnlock()
	} else {
		e.mu.Unlock()
	}
	if state == pipeNotOpen {
		return errZeroPipe
	}
	return &pipeClosedError{name: e.name, op: op}
}

// sysErr is a failed system call's error: "child: stdout of pid 12:
// write: broken pipe", matching the errno with errors.Is.
func (e *pipeEnd) sysErr(op string, err error) error {
	return fmt.Errorf("child: %s: %w", e.name, os.NewSyscallError(op, err))
}

// read is one read(2). Zero bytes into a non-empty buffer is the end of
// the stream: every write end is closed (the child's, and those of any
// process that inherited it).
func (e *pipeEnd) read(b []byte) (int, error) {
	if err := e.lock("read", true); err != nil {
		return 0, err
	}
	defer e.mu.RUnlock()
	if len(b) == 0 {
		return 0, nil // nothing to read into is not the end (as package os)
	}
	for {
		n, err := unix.Read(e.fd, b)
		switch {
		case err == nil && n == 0:
			return 0, io.EOF // lasts: no Drained (P5), which would make the hang-up an edge on every Poll
		case err == nil:
			if n < len(b) && e.edge { // the pipe was empty when the read ended (P5)
				if rerr := e.drained("read", poll.Readable); rerr != nil {
					return n, rerr
				}
			}
			return n, nil
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			if e.edge {
				if rerr := e.drained("read", poll.Readable); rerr != nil {
					return 0, rerr
				}
			}
			return 0, ErrWouldBlock
		default:
			return 0, e.sysErr("read", err)
		}
	}
}

// write writes all of b, or what the pipe takes before it is full: then it
// returns the count and ErrWouldBlock, as io.Writer asks of a short write.
func (e *pipeEnd) write(b []byte) (int, error) {
	if err := e.lock("write", true); err != nil {
		return 0, err
	}
	defer e.mu.RUnlock()
	n := 0
	for n < len(b) {
		m, err := unix.Write(e.fd, b[n:])
		if m > 0 {
			n += m
		}
		switch {
		case err == nil, err == unix.EINTR:
		case err == unix.EAGAIN:
			if e.edge {
				if rerr := e.drained("write", poll.Writable); rerr != nil {
					return n, rerr
				}
			}
			return n, ErrWouldBlock
		default:
			// EPIPE: nobody reads any more. The Go runtime lets the
			// SIGPIPE go for a descriptor other than 1 and 2.
			return n, e.sysErr("write", err)
		}
	}
	return n, nil
}

// drained ends the pass in direction r of an Edge registration (P5).
// Called with mu held for reading and e.edge set. A closed Poll, or one
// that no longer has the descriptor (deregistered as a raw Fd), leaves no
// pass to end.
func (e *pipeEnd) drained(op string, r poll.Ready) error {
	err := poll.Fd(e.fd).Drained(e.on, r)
	if err == nil || errors.Is(err, poll.ErrClosed) || errors.Is(err, poll.ErrNotRegistered) {
		return nil
	}
	return fmt.Errorf("child: %s: %s: drained: %w", e.name, op, err)
}

// String is the pipe's name, "" for a nil or zero pipe. The name is set
// before the pipe is handed out and never changes.
func (e *pipeEnd) String() string {
	if e == nil {
		return ""
	}
	return e.name
}

// sysfd is the descriptor, or -1 unless the pipe is open.
func (e *pipeEnd) sysfd() int {
	if e.lock("fd", true) != nil {
		return -1
	}
	defer e.mu.RUnlock()
	return e.fd
}

// close deregisters the descriptor, if a Poll that is still open has it
// (P4), and closes it. Deregistration errors that leave nothing to undo
// are ignored; the descriptor is closed whatever happens, and not retried
// on EINTR (it is released even then).
func (e *pipeEnd) close() error {
	if err := e.lock("close", false); err != nil {
		return err
	}
	defer e.mu.Unlock()
	var derr error
	if e.on != nil && !e.on.Closed() {
		if err := poll.Fd(e.fd).Deregister(e.on); err != nil &&
			!errors.Is(err, poll.ErrNotRegistered) && !errors.Is(err, poll.ErrClosed) {
			derr = fmt.Errorf("child: %s: close: deregister: %w", e.name, err)
		}
	}
	e.on, e.edge = nil, false
	cerr := unix.Close(e.fd)
	e.fd, e.state = -1, pipeClosed
	if cerr != nil {
		cerr = e.sysErr("close", cerr)
	}
	return errors.Join(derr, cerr)
}

// register implements poll.Evented.Register and remembers p for close.
func (e *pipeEnd) register(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	if err := e.lock("register", false); err != nil {
		return err
	}
	defer e.mu.Unlock()
	if p == nil {
		return fmt.Errorf("child: %s: register: nil Poll: %w", e.name, ErrInvalidArgument)
	}
	if e.on.Closed() { // P4
		e.on, e.edge = nil, false
	}
	if e.on != nil && e.on != p {
		return fmt.Errorf("child: %s: register: %w", e.name, poll.ErrRegisteredElsewhere)
	}
	if err := poll.Fd(e.fd).Register(p, t, interest, opts); err != nil {
		return err
	}
	e.on, e.edge = p, opts.IsEdge()
	return nil
}

// reregister implements poll.Evented.Reregister.
func (e *pipeEnd) reregister(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	if err := e.lock("reregister", false); err != nil {
		return err
	}
	defer e.mu.Unlock()
	if err := e.checkOn("reregister", p); err != nil {
		return err
	}
	if err := poll.Fd(e.fd).Reregister(p, t, interest, opts); err != nil {
		return err
	}
	e.edge = opts.IsEdge()
	return nil
}

// deregister implements poll.Evented.Deregister. The Poll is forgotten
// also when it says it is closed or does not have the descriptor, so that
// the pipe may then be registered elsewhere.
func (e *pipeEnd) deregister(p *poll.Poll) error {
	if err := e.lock("deregister", false); err != nil {
		return err
	}
	defer e.mu.Unlock()
	if err := e.checkOn("deregister", p); err != nil {
		return err
	}
	err := poll.Fd(e.fd).Deregister(p)
	if err == nil || errors.Is(err, poll.ErrClosed) || errors.Is(err, poll.ErrNotRegistered) {
		e.on, e.edge = nil, false
	}
	return err
}

// checkOn reports whether the pipe is registered with p. The call goes on
// to p when it is the remembered Poll, even a closed one, so that the
// caller hears poll.ErrClosed from it. Called with mu held for writing.
func (e *pipeEnd) checkOn(op string, p *poll.Poll) error {
	switch {
	case p == nil:
		return fmt.Errorf("child: %s: %s: nil Poll: %w", e.name, op, ErrInvalidArgument)
	case e.on == p:
		return nil
	case e.on.Closed(): // P4
		e.on, e.edge = nil, false
	}
	if e.on == nil {
		return fmt.Errorf("child: %s: %s: %w", e.name, op, poll.ErrNotRegistered)
	}
	return fmt.Errorf("child: %s: %s: %w", e.name, op, poll.ErrRegisteredElsewhere)
}
