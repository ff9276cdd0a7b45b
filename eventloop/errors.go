package eventloop

import (
	"errors"

	"github.com/unipoll/unipoll/poll"
)

// Errors returned by this package, wrapped with context; match them with
// errors.Is.
var (
	// ErrClosed is poll.ErrClosed: the Loop (or Group) has been closed.
	ErrClosed = poll.ErrClosed
	// ErrInvalidArgument is poll.ErrInvalidArgument: a nil source, handler
	// or function, a negative Config field, an out-of-range option.
	ErrInvalidArgument = poll.ErrInvalidArgument
	// ErrUnknownToken: the token does not name a source that is on the
	// Loop now. It was never handed out by this Loop, or its source has
	// been removed (a token is never reused, so a stale one cannot reach a
	// newer source).
	ErrUnknownToken = errors.New("unipoll: eventloop: unknown token")
	// ErrRunning: Run was called while another Run of the same Loop is in
	// progress.
	ErrRunning = errors.New("unipoll: eventloop: already running")
	// ErrTableFull: the Loop has as many sources as a token can number
	// (2^31).
	ErrTableFull = errors.New("unipoll: eventloop: too many sources")
)
