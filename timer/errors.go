package timer

import (
	"errors"
	"fmt"

	"github.com/unipoll/unipoll/poll"
)

// Errors returned by this package; match them with errors.Is.
var (
	// ErrFull: Set would hold more timeouts than the Timer's Capacity.
	ErrFull = errors.New("unipoll: timer full")
	// ErrNotRegistered is poll.ErrNotRegistered: Set before the Timer was
	// first registered with a Poll (its timeouts live in that Poll's
	// timing wheel).
	ErrNotRegistered = poll.ErrNotRegistered
	// ErrClosed is poll.ErrClosed: the Timer, or its Poll, is closed.
	ErrClosed = poll.ErrClosed
	// ErrInvalidArgument is poll.ErrInvalidArgument: a negative duration,
	// a bad option, a nil or zero Timer.
	ErrInvalidArgument = poll.ErrInvalidArgument
)

var errZero = fmt.Errorf("%w: nil or zero timer.Timer (make one with timer.New)", ErrInvalidArgument)

// errSetUnregistered is Set's ErrNotRegistered, in the words of the call
// the user made: the TimerQueue's own names its Add, which they never
// called.
var errSetUnregistered = fmt.Errorf("%w: Timer.Set before the Timer was registered with a Poll", ErrNotRegistered)
