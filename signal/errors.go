//go:build unix

package signal

import (
	"errors"
	"fmt"

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
