package channel

import (
	"errors"
	"fmt"

	"github.com/unipoll/unipoll/poll"
)

// Errors returned by this package; match them with errors.Is.
var (
	// ErrEmpty: TryRecv found no value to return now. A Readable event
	// follows when one arrives.
	ErrEmpty = errors.New("unipoll: channel empty")
	// ErrFull: a bounded channel has no room for TrySend. A Sender
	// registered for Writable is reported once room appears.
	ErrFull = errors.New("unipoll: channel full")
	// ErrDisconnected: for TryRecv, every Sender is closed and every value
	// has been received; for Send and TrySend, the Receiver is closed.
	ErrDisconnected = errors.New("unipoll: channel disconnected")
	// ErrClosed is poll.ErrClosed: the Sender or Receiver it was returned
	// by has been closed (Close twice, or a call after Close).
	ErrClosed = poll.ErrClosed
	// ErrInvalidArgument is poll.ErrInvalidArgument: a nil or zero Sender
	// or Receiver, or a capacity out of range.
	ErrInvalidArgument = poll.ErrInvalidArgument
)

var (
	errZeroSender   = fmt.Errorf("%w: nil or zero channel.Sender (make one with channel.New)", ErrInvalidArgument)
	errZeroReceiver = fmt.Errorf("%w: nil or zero channel.Receiver (make one with channel.New)", ErrInvalidArgument)
)
