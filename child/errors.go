//go:build unix

package child

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/poll"
)

// Errors returned by this package; match them with errors.Is.
var (
	// ErrNotExited: Status or Wait before the process has exited. The
	// Watcher becomes Readable when it does.
	ErrNotExited = errors.New("unipoll: child process has not exited")
	// ErrReaped: the process was reaped (by Wait, cmd.Wait or p.Wait)
	// before the Watcher could read its status, or before Watch: its exit
	// status went to whoever reaped it (cmd.ProcessState).
	ErrReaped = errors.New("unipoll: child process already reaped")
	// ErrNotChild: the process is not a child of this process, so nobody
	// here can learn how it ended.
	ErrNotChild = errors.New("unipoll: not a child of this process")
	// ErrNoStatus: the process has exited, but this system tells its exit
	// status only to the one who reaps it (kqueue, for a process that had
	// exited before Watch). Wait reaps it and returns the status.
	ErrNoStatus = errors.New("unipoll: exit status available only by reaping")
	// ErrSIGCHLDIgnored: SIGCHLD is set to be ignored (signal.Ignore, or
	// SIG_IGN or SA_NOCLDWAIT set by C code), so the kernel reaps children
	// as they exit and nobody can learn their exit status.
	ErrSIGCHLDIgnored = errors.New("unipoll: SIGCHLD is ignored, so children are reaped by the kernel")
	// ErrUnsupported: the mechanism asked for is not available on this
	// system (the SIGCHLD fallback needs waitid with WNOWAIT).
	ErrUnsupported = errors.New("unipoll: not supported on this system")
	// ErrClosed is poll.ErrClosed: the Watcher has been closed.
	ErrClosed = poll.ErrClosed
	// ErrInvalidArgument is poll.ErrInvalidArgument: a nil process or
	// command, a command not started (or, for Start, started already), a
	// released process, a nil or zero Watcher or pipe, a nil or foreign
	// signal, a stream Start cannot pipe.
	ErrInvalidArgument = poll.ErrInvalidArgument
	// ErrWouldBlock is returned, unwrapped, by a pipe's Read when the pipe
	// is empty and by its Write when it is full: wait for the next
	// Readable (or Writable) event and try again. It matches
	// errors.Is(err, unix.EAGAIN) too, as socket.ErrWouldBlock does.
	ErrWouldBlock error = wouldBlock{}
)

// wouldBlock is ErrWouldBlock's type: a comparable zero-size value, so
// that returning it allocates nothing, which unwraps to EAGAIN.
type wouldBlock struct{}

func (wouldBlock) Error() string { return "unipoll: pipe would block" }

// Unwrap makes errors.Is(ErrWouldBlock, unix.EAGAIN) true.
func (wouldBlock) Unwrap() error { return unix.EAGAIN }

// Timeout reports true, as EAGAIN does, for callers that test for it.
func (wouldBlock) Timeout() bool { return true }

var errZeroWatcher = fmt.Errorf("%w: nil or zero child.Watcher (make one with child.Watch)", ErrInvalidArgument)
