//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package child

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// kqueueWatch watches through a kqueue of its own that holds one
// EVFILT_PROC filter with NOTE_EXIT for the process, registered with the
// Poll as a descriptor: a kqueue is readable while it has an event
// pending, on every backend (kqueue, poll(2)). There is no goroutine and
// no signal, and nothing is reaped.
//
// The exit event carries the exit status in its data (darwin needs
// NOTE_EXITSTATUS for that); reading it is the only way to learn the status
// without reaping, and it takes the event out of the kqueue. So the first
// peek that finds it keeps the status and sets a latch (kqueue_latch_*.go),
// an event that stays pending for good, so that the kqueue stays readable
// from the exit on, as a level registration must see it.
//
// A process that has exited before Watch makes EV_ADD fail with ESRCH: its
// exit is reported at once (the latch is set at Watch), and since its status
// can only be had by reaping it, Status returns ErrNoStatus and Wait reaps.
//
// The Watcher's mutex guards every field.
type kqueueWatch struct {
	fdEvented
	pid    int
	proc   *os.Process
	exited bool // the exit was seen: st holds it, unless early
	early  bool // exited before Watch: status unknown
	st     ExitStatus
}

func newMechanism(p *os.Process, c config) (mechanism, Method, error) {
	if c.sigchld {
		return nil, "", fmt.Errorf("%w: the SIGCHLD fallback needs waitid(WNOWAIT)", ErrUnsupported)
	}
	if errors.Is(p.Signal(syscall.Signal(0)), os.ErrProcessDone) {
		return nil, "", ErrReaped
	}
	kq, err := unix.Kqueue()
	if err != nil {
		return nil, "", os.NewSyscallError("kqueue", err)
	}
	unix.CloseOnExec(kq)
	m := &kqueueWatch{fdEvented: fdEvented{fd: kq}, pid: p.Pid, proc: p}
	var ch [1]unix.Kevent_t
	unix.SetKevent(&ch[0], p.Pid, unix.EVFILT_PROC, unix.EV_ADD)
	ch[0].Fflags = noteExit
	_, err = kevent(kq, ch[:], nil)
	switch {
	case err == nil:
	case errors.Is(err, unix.ESRCH):
		m.exited, m.early = true, true
		err = setLatch(kq)
	default:
		err = os.NewSyscallError("kevent(EVFILT_PROC)", err)
	}
	if err != nil {
		_ = unix.Close(kq)
		return nil, "", err
	}
	return m, Kqueue, nil
}

func kevent(kq int, changes, events []unix.Kevent_t) (int, error) {
	var zero unix.Timespec
	for {
		n, err := unix.Kevent(kq, changes, events, &zero)
		if !errors.Is(err, unix.EINTR) {
			return n, err
		}
	}
}

func (m *kqueueWatch) peek() (ExitStatus, bool, error) {
	if m.early {
		return ExitStatus{}, true, ErrNoStatus
	}
	if m.exited {
		return m.st, true, nil
	}
	var ev [1]unix.Kevent_t
	n, err := kevent(m.fd, nil, ev[:])
	if err != nil {
		return ExitStatus{}, false, os.NewSyscallError("kevent", err)
	}
	if n == 0 || int(ev[0].Filter) != unix.EVFILT_PROC || ev[0].Fflags&unix.NOTE_EXIT == 0 {
		return ExitStatus{}, false, nil
	}
	m.exited = true
	m.st = ExitStatus{pid: m.pid, ws: syscall.WaitStatus(ev[0].Data)}
	if err := setLatch(m.fd); err != nil {
		return ExitStatus{}, false, err
	}
	return m.st, true, nil
}

func (m *kqueueWatch) signal(sig syscall.Signal) error {
	if err := m.proc.Signal(sig); err != nil {
		if errors.Is(err, os.ErrProcessDone) {
			return os.ErrProcessDone
		}
		return fmt.Errorf("signal pid %d: %w", m.pid, err)
	}
	return nil
}

func (m *kqueueWatch) close() error {
	m.release()
	return unix.Close(m.fd)
}
