//go:build unix

package sys

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// fdWaker is a wake-up object that is itself a pollable descriptor: the
// poll(2) selector polls fd() for reading, and so does kqueue where the
// kernel has no EVFILT_USER. It is level-triggered from the selector's point
// of view, so the selector must drain it after it fires.
//
// The methods do no coalescing; the selector's wakeGate does: wake is called
// only by the goroutine that won wakeGate.begin, and drain just BEFORE
// wakeGate.reset (waker.go says why the order matters).
type fdWaker interface {
	// fd is the descriptor to poll for readability.
	fd() int
	// wake makes fd readable. It succeeds when fd is readable already.
	wake() error
	// drain makes fd unreadable again, unless a wake lands after it.
	drain()
	// close releases the descriptors.
	close() error
}

// pipeWaker is the portable fdWaker: a non-blocking, close-on-exec pipe.
// wake writes one byte to the write end; a full pipe (EAGAIN) means wake-ups
// are pending already, which is success. drain empties the read end.
type pipeWaker struct {
	r, w int
}

func newPipeWaker() (*pipeWaker, error) {
	p, err := nonblockingPipe()
	if err != nil {
		return nil, err
	}
	return &pipeWaker{r: p[0], w: p[1]}, nil
}

func (p *pipeWaker) fd() int { return p.r }

func (p *pipeWaker) wake() error {
	one := [1]byte{1}
	err := ignoringEINTR(func() error {
		_, err := unix.Write(p.w, one[:])
		return err
	})
	if err != nil && err != unix.EAGAIN {
		return os.NewSyscallError("write(pipe)", err)
	}
	return nil
}

func (p *pipeWaker) drain() {
	var buf [128]byte
	for {
		n, err := unix.Read(p.r, buf[:])
		if err == unix.EINTR {
			continue
		}
		// A short read means the pipe is empty now; an error (EAGAIN) means
		// it was already.
		if err != nil || n < len(buf) {
			return
		}
	}
}

func (p *pipeWaker) close() error {
	if err := errors.Join(unix.Close(p.r), unix.Close(p.w)); err != nil {
		return fmt.Errorf("close waker pipe: %w", err)
	}
	return nil
}
