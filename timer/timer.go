package timer

import (
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/unipoll/unipoll/internal/base/slab"
	"github.com/unipoll/unipoll/internal/base/wheel"
	"github.com/unipoll/unipoll/poll"
)

// Timer is a queue of timeouts carrying values of type T. It is a
// poll.Evented: registered with Readable interest it is reported, as the
// poll contract says for each mode, while expired values wait to be taken:
//
//   - Level: on every Poll call while TryRecv has a value to return.
//   - Edge: once each time the Timer becomes readable, that is when a
//     timeout expires after TryRecv last returned false. A consumer
//     registered with Edge therefore takes values until TryRecv returns
//     false (Drain does) before it polls again.
//   - Oneshot: as either, then disarmed until Reregister, which reports
//     the Timer at once if values are waiting.
//
// A Timer is bound to the first Poll it is registered with, and Set needs
// it registered (ErrNotRegistered before). Timeouts keep expiring while it
// is deregistered; registering it again reports them.
//
// Set, Cancel, TryRecv, Drain, Len and Stats may be called from any
// goroutine.
//
// The zero Timer is not usable: its methods return an error wrapping
// ErrInvalidArgument (or false, or 0). Make one with New.
type Timer[T any] struct {
	tq       *poll.TimerQueue // the Evented the user registers
	q        *wheel.Queue     // tq's deadlines in the Poll's wheel (wheel.QueueOf)
	capacity int
	mode     valueMode // where a value travels (values.go): vals stays empty unless inSlab

	// vals and closed are guarded by the lock of q (the Poll's wheel):
	// they are touched only in the callbacks of q.Add, q.Remove, q.TryRecv
	// and q.Locked. One lock per Set and one per Cancel, not two: the
	// value and the deadline change together.
	vals   slab.Slab[T] // values by key; the key travels in the wheel entry
	closed bool
}

// Timeout names one timeout of a Timer, for Cancel. It stays safe to use
// after the timeout expired or was cancelled, and after its place in the
// wheel was reused: it then names nothing. The zero Timeout names nothing.
type Timeout struct{ id wheel.ID }

// Stats are a Timer's counters: those of the poll.TimerQueue it is built
// on, one per timeout (Pending: not yet expired; Expired: expired and not
// yet taken by TryRecv; Fired, Cancelled: since the Timer was made).
type Stats = poll.TimerStats

var _ poll.Evented = (*Timer[int])(nil)

// New returns a Timer configured by opts.
func New[T any](opts ...Option) (*Timer[T], error) {
	var c config
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	tq := poll.NewTimerQueue(c.tick)
	t := &Timer[T]{tq: tq, q: wheel.QueueOf(tq), capacity: c.capacity, mode: modeOf[T]()}
	if t.mode == besideKey {
		t.q.CarryPointers() // before the Queue is bound: nothing else has it yet
	}
	return t, nil
}

func (t *Timer[T]) check() error {
	if t == nil || t.tq == nil {
		return errZero
	}
	return nil
}

// Register implements poll.Evented. Users call Poll.Register.
func (t *Timer[T]) Register(p *poll.Poll, tok poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	if err := t.check(); err != nil {
		return err
	}
	return t.tq.Register(p, tok, interest, opts)
}

// Reregister implements poll.Evented. Users call Poll.Reregister.
func (t *Timer[T]) Reregister(p *poll.Poll, tok poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	if err := t.check(); err != nil {
		return err
	}
	return t.tq.Reregister(p, tok, interest, opts)
}

// Deregister implements poll.Evented. Users call Poll.Deregister.
func (t *Timer[T]) Deregister(p *poll.Poll) error {
	if err := t.check(); err != nil {
		return err
	}
	return t.tq.Deregister(p)
}

// Set schedules v to expire d from now: never earlier, and at most one
// tick of the Poll's wheel later (or of the Timer's Tick, if coarser,
// rounded up to whole wheel ticks). It
// returns the Timeout that names it, or ErrInvalidArgument for a negative
// d, ErrFull past the Timer's Capacity, ErrNotRegistered before the Timer
// was first registered, ErrClosed once the Timer or its Poll is closed.
func (t *Timer[T]) Set(d time.Duration, v T) (Timeout, error) {
	if err := t.check(); err != nil {
		return Timeout{}, err
	}
	if d < 0 {
		return Timeout{}, fmt.Errorf("%w: negative duration %v", ErrInvalidArgument, d)
	}
	var id wheel.ID
	var err error
	if t.mode != inSlab {
		// Once Close has begun, the Queue's own closed check answers; a
		// Set that slips in before it is dropped with the rest.
		k, p := split(t.mode, v)
		id, err = t.q.AddKey(d, k, p, t.capacity, ErrFull)
	} else {
		id, err = t.add(d, v)
	}
	if err != nil {
		if errors.Is(err, ErrNotRegistered) {
			err = errSetUnregistered
		}
		return Timeout{}, err
	}
	return Timeout{id}, nil
}

// add schedules v, kept in the slab, d from now.
func (t *Timer[T]) add(d time.Duration, v T) (wheel.ID, error) {
	return t.q.Add(d, func() (uint64, error) {
		if t.closed {
			return 0, ErrClosed
		}
		if t.capacity > 0 && t.vals.Len() >= t.capacity {
			return 0, ErrFull
		}
		k, p := t.vals.Alloc()
		*p = v
		return uint64(k), nil
	})
}

// Cancel stops the timeout to from expiring and returns its value. It
// returns false if the timeout has expired already (even if its value has
// not been taken yet: TryRecv returns it), was cancelled already, or belongs
// to another Timer; it never cancels another timeout.
func (t *Timer[T]) Cancel(to Timeout) (T, bool) {
	var v T
	if t.check() != nil {
		return v, false
	}
	if t.mode != inSlab {
		k, p, ok := t.q.RemoveKey(to.id)
		if ok {
			v = join[T](t.mode, k, p)
		}
		return v, ok
	}
	ok := false
	t.q.Remove(to.id, func(k uint64) { v, ok = t.take(k) })
	return v, ok
}

// TryRecv takes the next expired value, the one whose deadline is the
// earliest, or returns false if none has expired. It does not block.
func (t *Timer[T]) TryRecv() (T, bool) {
	var v T
	if t.check() != nil {
		return v, false
	}
	if t.mode != inSlab {
		k, p, ok := t.q.TryRecvKey()
		if ok {
			v = join[T](t.mode, k, p)
		}
		return v, ok
	}
	ok := false
	t.q.TryRecv(func(k uint64) { v, ok = t.take(k) })
	return v, ok
}

// take removes value k, which the wheel has handed to this caller alone.
// Under the lock of t.q.
func (t *Timer[T]) take(k uint64) (T, bool) {
	var zero T
	if t.closed {
		return zero, false
	}
	v := *t.vals.Get(uint32(k))
	t.vals.Free(uint32(k))
	return v, true
}

// Drain returns an iterator over the values that have expired, in deadline
// order: it calls TryRecv until TryRecv returns false.
func (t *Timer[T]) Drain() iter.Seq[T] {
	return func(yield func(T) bool) {
		for {
			v, ok := t.TryRecv()
			if !ok || !yield(v) {
				return
			}
		}
	}
}

// Len returns the number of timeouts the Timer holds: pending, or expired
// and not yet taken.
func (t *Timer[T]) Len() int {
	if t.check() != nil {
		return 0
	}
	if t.mode != inSlab {
		// The wheel counts them. A closed Timer holds nothing, but its
		// Queue's counts stay as they were when its Poll closed first.
		closed := false
		t.q.Locked(func() { closed = t.closed })
		if closed {
			return 0
		}
		s := t.q.Stats()
		return s.Pending + s.Expired
	}
	n := 0
	t.q.Locked(func() {
		if !t.closed {
			n = t.vals.Len()
		}
	})
	return n
}

// Stats returns the Timer's counters (zero before it is registered).
func (t *Timer[T]) Stats() Stats {
	if t.check() != nil {
		return Stats{}
	}
	return t.tq.Stats()
}

// Close cancels every timeout, drops every value and releases the Timer:
// once it returns, no Poll call started afterwards reports it, and Set
// returns ErrClosed. Its timeouts leave the Poll's wheel at once (Stats
// counts the pending ones cancelled), so a Poll serves any number of
// Timers opened and closed one after another. Closing twice returns
// ErrClosed.
func (t *Timer[T]) Close() error {
	if err := t.check(); err != nil {
		return err
	}
	was := false
	t.q.Locked(func() {
		was = t.closed
		t.closed = true
		t.vals.Reset()
	})
	if was {
		return ErrClosed
	}
	return t.tq.Close()
}
