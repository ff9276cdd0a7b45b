//go:build netbsd || openbsd

package sys

import (
	"os"

	"golang.org/x/sys/unix"
)

// pipeKqWaker wakes kevent through a pipe (x/sys has no EVFILT_USER here):
// its read end is registered level-triggered with EVFILT_READ, so Select
// drains it after it fires.
type pipeKqWaker struct {
	p *pipeWaker
}

func newKqWaker() (kqWaker, error) {
	p, err := newPipeWaker()
	if err != nil {
		return nil, err
	}
	return pipeKqWaker{p: p}, nil
}

func (w pipeKqWaker) register(kq int) error {
	// udata is 0, so a plain Kevent_t on the stack is safe.
	var changes [1]unix.Kevent_t
	unix.SetKevent(&changes[0], w.p.fd(), unix.EVFILT_READ, unix.EV_ADD)
	err := ignoringEINTR(func() error {
		_, err := unix.Kevent(kq, changes[:], nil, nil)
		return err
	})
	if err != nil {
		return os.NewSyscallError("kevent(waker pipe)", err)
	}
	return nil
}

func (w pipeKqWaker) isWaker(k *unix.Kevent_t) bool {
	// No registration can name the pipe's descriptor while it is open.
	return int(k.Filter) == unix.EVFILT_READ && int(k.Ident) == w.p.fd()
}

func (w pipeKqWaker) wake(int) error { return w.p.wake() }

func (w pipeKqWaker) drain() { w.p.drain() }

func (w pipeKqWaker) close() error { return w.p.close() }
