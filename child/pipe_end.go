//go:build unix

package child

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/internal/onpoll/fdguard"
	"github.com/unipoll/unipoll/poll"
)

// pipeEnd is this process's end of a pipe to or from a child's standard
// stream, and its guard: what PipeReader and PipeWriter share. It is an
// fdguard.Guard (internal/onpoll/fdguard), the guard the socket package's
// sockets use too, which states the rules it keeps; its errors are named
// as the child package's, with the pipe's name ("stdout of pid 1234"). A
// nil *pipeEnd (what a nil pipe hands over, see PipeReader.end) is a pipe
// never opened, and every function below accepts one.
type pipeEnd = fdguard.Guard[pipeName]

// pipeName is a pipe's name, "stdout of pid 1234", and names its errors.
type pipeName string

// errZeroPipe is the error of every method of a nil or zero pipe.
var errZeroPipe = fmt.Errorf("%w: nil or zero child pipe (child.Start makes them)", ErrInvalidArgument)

func (pipeName) NotOpen(string) error { return errZeroPipe }

func (n pipeName) Closed(op string) error { return &pipeClosedError{name: string(n), op: op} }

func (n pipeName) Wrap(op string, err error) error {
	return fmt.Errorf("child: %s: %s: %w", n, op, err)
}

// Sys is a failed system call's error: "child: stdout of pid 12: write:
// broken pipe", matching the errno with errors.Is.
func (n pipeName) Sys(op string, err error) error {
	return fmt.Errorf("child: %s: %w", n, os.NewSyscallError(op, err))
}

// pipeClosedError is the error of an operation on a closed pipe. It
// matches ErrClosed (poll.ErrClosed) and os.ErrClosed, so code written for
// an *os.File recognises it too.
type pipeClosedError struct{ name, op string }

func (e *pipeClosedError) Error() string {
	return "child: " + e.name + ": " + e.op + ": pipe closed"
}

// Is matches ErrClosed and os.ErrClosed.
func (e *pipeClosedError) Is(target error) bool { return target == ErrClosed || target == os.ErrClosed }

// readPipe is one read(2). Zero bytes into a non-empty buffer is the end of
// the stream: every write end is closed (the child's, and those of any
// process that inherited it).
func readPipe(e *pipeEnd, b []byte) (int, error) {
	if err := e.RLock("read"); err != nil {
		return 0, err
	}
	defer e.RUnlock()
	if len(b) == 0 {
		return 0, nil // nothing to read into is not the end (as package os)
	}
	for {
		n, err := unix.Read(e.Fd(), b)
		switch {
		case err == nil && n == 0:
			return 0, io.EOF // lasts: no Drained (fdguard invariant 5), which would make the hang-up an edge on every Poll
		case err == nil:
			if n < len(b) && e.Edge() { // the pipe was empty when the read ended (fdguard invariant 5)
				if rerr := e.Drained("read", poll.Readable); rerr != nil {
					return n, rerr
				}
			}
			return n, nil
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			if e.Edge() {
				if rerr := e.Drained("read", poll.Readable); rerr != nil {
					return 0, rerr
				}
			}
			return 0, ErrWouldBlock
		default:
			return 0, e.Name().Sys("read", err)
		}
	}
}

// writePipe writes all of b, or what the pipe takes before it is full: then it
// returns the count and ErrWouldBlock, as io.Writer asks of a short write.
func writePipe(e *pipeEnd, b []byte) (int, error) {
	if err := e.RLock("write"); err != nil {
		return 0, err
	}
	defer e.RUnlock()
	n := 0
	for n < len(b) {
		m, err := unix.Write(e.Fd(), b[n:])
		if m > 0 {
			n += m
		}
		switch {
		case err == nil, err == unix.EINTR:
		case err == unix.EAGAIN:
			if e.Edge() {
				if rerr := e.Drained("write", poll.Writable); rerr != nil {
					return n, rerr
				}
			}
			return n, ErrWouldBlock
		default:
			// EPIPE: nobody reads any more. The Go runtime lets the
			// SIGPIPE go for a descriptor other than 1 and 2.
			return n, e.Name().Sys("write", err)
		}
	}
	return n, nil
}
