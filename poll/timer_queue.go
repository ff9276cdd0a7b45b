package poll

import (
	"errors"
	"time"

	"github.com/unipoll/unipoll/internal/base/wheel"
)

// TimerQueue is a set of deadlines on a Poll's own timing wheel, each
// carrying a key of the caller's: the building block of the timer package
// (which maps keys to values of any type), and of any source that needs
// deadlines without a goroutine or an OS timer per deadline. Deadlines
// that pass join the queue's expired list, in deadline order, and a
// TimerQueue is an Evented that is Readable while that list is not empty.
//
// A TimerQueue is bound to the first Poll it is registered with, like a
// Registration, and Add needs it registered (ErrNotRegistered before).
// Add, Remove, TryRecv and Len may be called from any goroutine. The zero
// TimerQueue is not usable: make one with NewTimerQueue.
//
// The deadlines themselves, the queue's expired keys and the lock they
// change under belong to a wheel.Queue (internal/base/wheel, queue.go),
// bound to the Poll's wheel by the first Register. Package timer reaches
// that Queue through wheel.QueueOf, to keep its values under the same lock
// (wheel/link.go says how).
type TimerQueue struct {
	reg *Registration
	wheelLink
}

// wheelLink is wheel.Link under an unexported name, so that embedding it
// adds no exported field or method to TimerQueue.
type wheelLink = wheel.Link

// TimerID names one deadline of a TimerQueue, for Remove. It stays safe to
// use after its deadline has expired or been removed, and after its slot in
// the wheel has been reused: it then names nothing. The zero TimerID names
// nothing.
type TimerID struct{ id wheel.ID }

// TimerStats are a TimerQueue's counters.
type TimerStats struct {
	// Pending is the number of deadlines not yet passed.
	Pending int
	// Expired is the number of deadlines passed and not yet taken by
	// TryRecv.
	Expired int
	// Fired is the number of deadlines that have passed since the queue
	// was made.
	Fired uint64
	// Cancelled is the number of deadlines removed before they passed.
	Cancelled uint64
}

// NewTimerQueue returns a TimerQueue whose deadlines are rounded up to a
// multiple of resolution, counted from the creation of the Poll it is
// bound to, so that deadlines close together pass in one tick and wake
// the Poll once. A resolution at or below the Poll's WheelTick means the
// tick; one that is not a multiple of it is rounded up to one, since the
// wheel fires only at the start of a tick. A deadline therefore passes
// never early and less than one resolution (or one tick) late.
func NewTimerQueue(resolution time.Duration) *TimerQueue {
	reg, set := NewRegistration()
	q := &TimerQueue{reg: reg}
	n := set.n
	q.queue().Init(resolution, func(on bool) {
		// Under the wheel's mutex (wheel/owner.go, takeExpired): an
		// expired deadline never waits with its queue unreadable.
		if on {
			_ = n.set(Readable)
		} else {
			_ = n.unset(Readable)
		}
	}, func() error {
		if n.state.Load()&stDropped != 0 {
			return ErrClosed
		}
		return errAddUnregistered
	}, ErrClosed)
	return q
}

// queue is the queue's deadlines in its Poll's wheel.
func (q *TimerQueue) queue() *wheel.Queue { return wheel.QueueOf(&q.wheelLink) }

var errAddUnregistered = wrapf(ErrNotRegistered, "TimerQueue.Add before the queue was registered with a Poll")

var errZeroTimerQueue = wrapf(ErrInvalidArgument, "nil or zero TimerQueue (make one with poll.NewTimerQueue)")

func (q *TimerQueue) check() error {
	if q == nil || q.reg == nil {
		return errZeroTimerQueue
	}
	return nil
}

// Register implements Evented. The first Register binds the queue to p.
func (q *TimerQueue) Register(p *Poll, t Token, interest Ready, opts PollOpt) error {
	if err := q.check(); err != nil {
		return err
	}
	err := q.queue().Bind(func() (*wheel.Wheel, error) {
		if err := q.reg.Register(p, t, interest, opts); err != nil {
			return nil, err
		}
		return &p.wheel.Wheel, nil
	}, func() { _ = q.reg.Deregister(p) })
	if errors.Is(err, wheel.ErrFull) {
		return wrapf(ErrInvalidArgument, "more than %d TimerQueues on one Poll", wheel.MaxQueues)
	}
	return err
}

// Reregister implements Evented.
func (q *TimerQueue) Reregister(p *Poll, t Token, interest Ready, opts PollOpt) error {
	if err := q.check(); err != nil {
		return err
	}
	return q.reg.Reregister(p, t, interest, opts)
}

// Deregister implements Evented. Deadlines keep passing while the queue is
// deregistered; registering it again reports the ones that did.
func (q *TimerQueue) Deregister(p *Poll) error {
	if err := q.check(); err != nil {
		return err
	}
	return q.reg.Deregister(p)
}

// Add schedules a deadline d from now carrying key, and returns its id.
// It returns ErrInvalidArgument for a negative d, ErrNotRegistered before
// the queue is first registered, and ErrClosed once the queue or its Poll
// is closed.
func (q *TimerQueue) Add(d time.Duration, key uint64) (TimerID, error) {
	if err := q.check(); err != nil {
		return TimerID{}, err
	}
	if d < 0 {
		return TimerID{}, wrapf(ErrInvalidArgument, "negative duration %v", d)
	}
	id, err := q.queue().Add(d, func() (uint64, error) { return key, nil })
	return TimerID{id}, err
}

// Remove cancels the deadline t names, if it has not passed, and returns
// its key. It returns false for a deadline that has passed (even one not
// yet taken by TryRecv), was removed already, or is another queue's.
func (q *TimerQueue) Remove(t TimerID) (key uint64, ok bool) {
	if q.check() != nil {
		return 0, false
	}
	return q.queue().Remove(t.id, nil)
}

// TryRecv takes the oldest expired deadline (the one with the earliest
// deadline) and returns its key, or false if none has expired. It does not
// block. The queue stops being Readable when TryRecv has taken the last
// one.
func (q *TimerQueue) TryRecv() (key uint64, ok bool) {
	if q.check() != nil {
		return 0, false
	}
	return q.queue().TryRecv(nil)
}

// Stats returns the queue's counters (zero before it is registered).
func (q *TimerQueue) Stats() TimerStats {
	if q.check() != nil {
		return TimerStats{}
	}
	s := q.queue().Stats()
	return TimerStats{Pending: s.Pending, Expired: s.Expired, Fired: s.Fired, Cancelled: s.Cancelled}
}

// Len returns the number of deadlines pending or expired and not yet taken.
func (q *TimerQueue) Len() int {
	s := q.Stats()
	return s.Pending + s.Expired
}

// Close drops every deadline and closes the queue: once it returns, no
// Poll call started afterwards reports it, and Add returns ErrClosed. The
// pending deadlines leave the Poll's wheel at once (Stats counts them
// cancelled), and the queue's place among the Poll's TimerQueues is free
// for the next one. Closing twice returns ErrClosed.
func (q *TimerQueue) Close() error {
	if err := q.check(); err != nil {
		return err
	}
	return q.queue().Close(q.reg.Close)
}
