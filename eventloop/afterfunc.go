package eventloop

import (
	"fmt"
	"time"

	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/timer"
)

// The Loop's timeouts live in one timer.Timer registered with its Poll, so
// they sit in the Poll's own timing wheel: no goroutine and no OS timer
// per timeout, and the Poll's blocking timeout is what wakes the Loop for
// the next one. Each value is a timerTask; the Loop's timer source takes
// the expired ones (within the iteration's budget, like posted functions)
// and runs them on the Loop.

// timerTask is what expires: an AfterFunc, or a Conn's deadline check.
type timerTask interface {
	fire(l *Loop)
}

// afterFunc is AfterFunc's task.
type afterFunc func(*Loop)

func (f afterFunc) fire(l *Loop) { f(l) }

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
	to, err := l.tm.Set(d, afterFunc(f))
	if err != nil {
		return noCancel, fmt.Errorf("eventloop: AfterFunc: %w", err)
	}
	return func() bool {
		_, ok := l.tm.Cancel(to)
		return ok
	}, nil
}

func noCancel() bool { return false }

// newTimer makes the Loop's timer source.
func (l *Loop) newTimer() error {
	tm, err := timer.New[timerTask]()
	if err != nil {
		return err
	}
	l.tm = tm
	_, err = l.add(tm, poll.Readable, poll.Edge, nil, kindTimer, 0, nil)
	return err
}

// runTimers runs up to budget expired tasks, earliest deadline first,
// and reports how many it ran and whether more are waiting. The Timer is
// registered Edge: it is reported again only once Poll (the method) has
// returned false, so when the budget stops it early the Loop queues it
// again itself (more), as it does posted functions.
func (l *Loop) runTimers(budget int) (n int, more bool) {
	for n < budget {
		t, ok := l.tm.Poll()
		if !ok {
			return n, false
		}
		n++
		l.stats.timers.Add(1)
		t.fire(l)
	}
	return n, true
}
