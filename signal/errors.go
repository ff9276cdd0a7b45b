//go:build unix

package signal

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/poll"
)

// Errors returned by this package; match them with errors.Is.
var (
	// ErrUncatchable: SIGKILL and SIGSTOP cannot be caught, blocked or
	// ignored, so no Watcher can see them.
	ErrUncatchable = errors.New("unipoll: signal cannot be caught")
	// ErrClosed is poll.ErrClosed: the Watcher has been closed (Close twice,
	// or Register after Close).
	ErrClosed = poll.ErrClosed
	// ErrInvalidArgument is poll.ErrInvalidArgument: no signal given, a nil
	// signal, a signal that is not a syscall.Signal or is out of range, or
	// a nil or zero Watcher.
	ErrInvalidArgument = poll.ErrInvalidArgument
)

var errZeroWatcher = fmt.Errorf("%w: nil or zero signal.Watcher (make one with signal.New)", ErrInvalidArgument)

// uncatchable is New's error for SIGKILL or SIGSTOP. It names the signal,
// and says why, where wrapping the sentinel would end with the signal's
// description alone ("cannot be caught: killed").
type uncatchable syscall.Signal

func (e uncatchable) Error() string {
	return "unipoll: signal: " + unix.SignalName(syscall.Signal(e)) +
		" cannot be caught: no process may catch, block or ignore it"
}

// Unwrap makes errors.Is(err, ErrUncatchable) true.
func (uncatchable) Unwrap() error { return ErrUncatchable }
