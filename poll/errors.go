package poll

import (
	"errors"
	"fmt"
)

// Errors returned by this package, wrapped with context; match them with
// errors.Is.
var (
	// ErrClosed: the Poll, or the Registration, has been closed.
	ErrClosed = errors.New("unipoll: closed")
	// ErrAlreadyRegistered: the source is already registered with this Poll;
	// use Reregister to change it.
	ErrAlreadyRegistered = errors.New("unipoll: already registered")
	// ErrNotRegistered: Reregister or Deregister of a source that is not
	// registered with this Poll.
	ErrNotRegistered = errors.New("unipoll: not registered")
	// ErrRegisteredElsewhere: a Registration is bound to the first Poll it
	// was registered with and cannot move to another.
	ErrRegisteredElsewhere = errors.New("unipoll: registered with another Poll")
	// ErrReservedToken: the token is reserved for unipoll's own use.
	ErrReservedToken = errors.New("unipoll: reserved token")
	// ErrInvalidInterest: the interest set is empty (a source that asks
	// for nothing could never be reported), or has bits that are not
	// readiness kinds.
	ErrInvalidInterest = errors.New("unipoll: invalid interest")
	// ErrInvalidOpts: the trigger mode is not Edge or Level, optionally with
	// Oneshot.
	ErrInvalidOpts = errors.New("unipoll: invalid poll options")
	// ErrInvalidFd: the descriptor is negative, closed, or of a kind the
	// backend cannot watch.
	ErrInvalidFd = errors.New("unipoll: invalid file descriptor")
	// ErrInvalidArgument: a nil Events buffer, a negative delay, a bad
	// Config field.
	ErrInvalidArgument = errors.New("unipoll: invalid argument")
)

func wrapf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)
}
