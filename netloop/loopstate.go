package netloop

import (
	"errors"
	"net"
	"sync/atomic"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/poll"
)

// loopState is what netloop keeps per Loop, in the Loop's Value under
// stateKey: made with the Loop's first Conn, gone with the Loop.
type loopState struct {
	conns atomic.Int64 // Conns on the Loop: added, not yet closed
}

type stateKey struct{}

func newLoopState() any { return new(loopState) }

// stateOf returns l's loopState. l is a Loop made with eventloop.New.
func stateOf(l *eventloop.Loop) *loopState {
	return l.Value(stateKey{}, newLoopState).(*loopState)
}

// Conns is the number of Conns on l (added and not yet closed); 0 for a
// nil or zero Loop.
func Conns(l *eventloop.Loop) int {
	if l == nil {
		return 0
	}
	s, _ := l.Value(stateKey{}, nil).(*loopState)
	if s == nil {
		return 0
	}
	return int(s.conns.Load())
}

// ignoreClosed drops the errors that mean "already gone": closing or
// deregistering something closed, or not registered.
func ignoreClosed(err error) error {
	if err == nil || errors.Is(err, poll.ErrClosed) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, poll.ErrNotRegistered) {
		return nil
	}
	return err
}
