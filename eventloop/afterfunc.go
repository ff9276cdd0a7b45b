package eventloop

import (
	"fmt"
	"time"
)

// The Loop's timeouts live in one timer.Timer registered with its Poll
// (own.go), so they sit in the Poll's own timing wheel: no goroutine and
// no OS timer per timeout, and the Poll's blocking timeout is what wakes
// the Loop for the next one.

// AfterFunc runs f on the Loop once d has passed: no earlier, and at most
// one tick of the Poll's timing wheel later (poll.Config.WheelTick, 1ms by
// default) when the Loop is not busy; a busy Loop runs it in its next
// iteration. It may be called from any goroutine, also from a handler.
// cancel stops f from running and reports whether it did: false once f
// has run or is about to (its deadline has passed), or after an earlier
// cancel.
//
// It returns an error matching ErrInvalidArgument for a nil f or a
// negative d, and ErrClosed once the Loop is closed; cancel is then a
// function that returns false.
func (l *Loop) AfterFunc(d time.Duration, f func(*Loop)) (cancel func() bool, err error) {
	if l == nil || l.p == nil {
		return noCancel, errZeroLoop
	}
	if f == nil || d < 0 {
		return noCancel, fmt.Errorf("%w: eventloop: AfterFunc(%v, %p)", ErrInvalidArgument, d, f)
	}
	to, err := l.tm.Set(d, f)
	if err != nil {
		return noCancel, fmt.Errorf("eventloop: AfterFunc: %w", err)
	}
	return func() bool {
		_, ok := l.tm.Cancel(to)
		return ok
	}, nil
}

func noCancel() bool { return false }
