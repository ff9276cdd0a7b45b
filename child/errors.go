//go:build unix

package child

import (
	"errors"
	"fmt"

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
	// command, a command not started, a released process, a nil or zero
	// Watcher, a nil or foreign signal.
	ErrInvalidArgument = poll.ErrInvalidArgument
)

var errZeroWatcher = fmt.Errorf("%w: nil or zero child.Watcher (make one with child.Watch)", ErrInvalidArgument)
