//go:build linux

package child

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// pidfdWatch watches through a pidfd registered straight into the Poll's
// selector as a poll.Fd: the kernel makes it readable when the process
// exits, so there is no goroutine and no signal in the way.
//
// The descriptor is either a duplicate of the Go runtime's own pidfd for the
// process (Go 1.26: os.Process.WithHandle), or one from
// pidfd_open(PIDFD_NONBLOCK). A duplicate shares its file description with
// the runtime's, which is blocking: it must stay so, or cmd.Wait's blocking
// waitid(P_PIDFD) would fail with EAGAIN. Nothing here needs it
// non-blocking: the peek passes WNOHANG, and epoll does not care.
//
// The Watcher's mutex guards every use of the descriptor.
type pidfdWatch struct {
	fdEvented
}

func (m *pidfdWatch) peek() (ExitStatus, bool, error) {
	return peekID(unix.P_PIDFD, m.fd)
}

func (m *pidfdWatch) signal(sig syscall.Signal) error {
	err := unix.PidfdSendSignal(m.fd, sig, nil, 0)
	if errors.Is(err, unix.ESRCH) {
		return os.ErrProcessDone
	}
	if err != nil {
		return os.NewSyscallError("pidfd_send_signal", err)
	}
	return nil
}

func (m *pidfdWatch) close() error {
	m.release()
	return unix.Close(m.fd)
}

// newMechanism picks the pidfd, unless told otherwise or the system lacks
// it, and falls back to SIGCHLD.
func newMechanism(p *os.Process, c config) (mechanism, Method, error) {
	if !c.sigchld {
		fd, err := openPidfd(p)
		switch {
		case err == nil:
			m := &pidfdWatch{fdEvented{fd: fd}}
			if _, _, err := m.peek(); err != nil {
				_ = unix.Close(fd)
				if errors.Is(err, ErrReaped) {
					err = ErrNotChild // opened, so not reaped: someone else's
				}
				return nil, "", err
			}
			return m, Pidfd, nil
		case !errors.Is(err, errNoPidfd):
			return nil, "", err
		}
	}
	m, err := newSigchldWatch(p)
	if err != nil {
		return nil, "", err
	}
	return m, SIGCHLD, nil
}

// errNoPidfd: the system has no usable pidfd (kernel before 5.4, seccomp).
var errNoPidfd = errors.New("pidfd unavailable")

// openPidfd returns a pidfd for p: a duplicate of the runtime's, or a new
// one. ErrReaped if p has been reaped already.
func openPidfd(p *os.Process) (int, error) {
	fd, err := dupRuntimePidfd(p)
	switch {
	case err == nil:
		return fd, nil
	case errors.Is(err, os.ErrProcessDone):
		return -1, ErrReaped
	}
	if !pidfdWorks() {
		return -1, errNoPidfd
	}
	// pidfd_open names the process by pid, so make sure first that its
	// owner has not reaped it (after which the pid may be reused).
	// Signal(0) tells: it fails with ErrProcessDone once Wait has returned.
	if err := p.Signal(syscall.Signal(0)); err != nil {
		if errors.Is(err, os.ErrProcessDone) {
			return -1, ErrReaped
		}
		return -1, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	fd, err = unix.PidfdOpen(p.Pid, unix.PIDFD_NONBLOCK)
	switch {
	case err == nil:
		return fd, nil
	case errors.Is(err, unix.ESRCH):
		return -1, ErrReaped
	case errors.Is(err, unix.EMFILE), errors.Is(err, unix.ENFILE), errors.Is(err, unix.ENOMEM):
		return -1, os.NewSyscallError("pidfd_open", err)
	}
	return -1, errNoPidfd
}

// pidfdWorks reports whether pidfd_open, waitid(P_PIDFD) and
// pidfd_send_signal all work here, as the Go runtime checks for itself:
// kernels before 5.4 lack some, and seccomp filters may refuse them.
var pidfdWorks = sync.OnceValue(func() bool {
	fd, err := unix.PidfdOpen(os.Getpid(), unix.PIDFD_NONBLOCK)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var info unix.Siginfo
	// We are not our own parent: ECHILD is the answer that proves P_PIDFD.
	if err := unix.Waitid(unix.P_PIDFD, fd, &info, unix.WEXITED|unix.WNOHANG, nil); !errors.Is(err, unix.ECHILD) {
		return false
	}
	return unix.PidfdSendSignal(fd, 0, nil, 0) == nil
})
