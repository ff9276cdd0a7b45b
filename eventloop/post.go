package eventloop

import (
	"errors"
	"fmt"

	"github.com/unipoll/unipoll/channel"
)

// Post queues f to run on the Loop, from any goroutine, also from a
// handler. Functions run in the order each goroutine posted them, with no
// promise between goroutines; with several workers, still one at a time.
// Posting wakes a Loop blocked in Poll: the channel package's Receiver is
// one of the Loop's sources, so a post costs no system call while the
// Loop is busy.
//
// A function posted before Run runs once Run starts; one posted after
// Shutdown runs if the Loop is run again, and is dropped by Close. Post
// returns an error matching ErrClosed after Close.
func (l *Loop) Post(f func(*Loop)) error {
	if l == nil || l.p == nil {
		return errZeroLoop
	}
	if f == nil {
		return fmt.Errorf("%w: eventloop: Post of a nil function", ErrInvalidArgument)
	}
	if l.closed.Load() {
		return ErrClosed
	}
	if err := l.postTx.Send(f); err != nil {
		if errors.Is(err, channel.ErrDisconnected) || errors.Is(err, channel.ErrClosed) {
			return ErrClosed
		}
		return err
	}
	return nil
}
