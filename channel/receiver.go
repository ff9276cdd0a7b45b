package channel

import (
	"iter"
	"sync"

	"golang.org/x/sys/cpu"

	"github.com/unipoll/unipoll/poll"
)

// Receiver is the receiving end of a channel. It is safe for concurrent use
// (its methods serialise on a mutex), though a channel has one consumer in
// mind: the goroutine that polls it.
//
// A Receiver is a poll.Evented. Registered with Readable interest it is
// reported, as the poll contract says for each mode:
//
//   - Level: on every Poll call while TryRecv has a value to return, and
//     forever once the channel is disconnected.
//   - Edge: once for each time the Receiver becomes readable, that is when
//     a value arrives after TryRecv last returned ErrEmpty or returned the
//     last value, and once when the last Sender closes. A consumer
//     registered with Edge therefore receives until TryRecv returns
//     ErrEmpty (or ErrDisconnected) before it polls again; the edge for a
//     value that arrives after that is never missed.
//   - Oneshot: as either, then disarmed until Reregister, which reports the
//     Receiver at once if values are pending.
//
// Registering a Receiver that already has values pending reports it on the
// next Poll call. Spurious events are possible (a value received between
// the Send that set the readiness and the Poll call that reports it), so
// a consumer treats ErrEmpty after an event as normal. Disconnection also
// sets Hup, reported to a registration whose interest includes it.
//
// The zero Receiver is not usable: its methods return an error wrapping
// ErrInvalidArgument (Len returns 0, Drain yields nothing).
type Receiver[T any] struct {
	c   *core[T]
	reg *poll.Registration

	_ cpu.CacheLinePad // keep the consumer's lock apart from others' writes

	mu sync.Mutex
	// ahead holds values taken from the queue and not yet returned, oldest
	// first, from ahead[aheadAt]: the one value TryRecv pops ahead (rule C
	// in channel.go), or what a Drain stopped early handed back.
	ahead   []T
	aheadAt int
	// given is how many values at the front of ahead a Drain handed back:
	// their batch gave their capacity back already, so taking them gives
	// none (each value's capacity is given back exactly once).
	given    int
	closed   bool
	draining bool // batch is in use by a Drain
	batch    []T  // Drain's buffer, allocated on first use

	_ cpu.CacheLinePad
}

// drainBatch is how many values Drain takes per lock of the Receiver.
const drainBatch = 64

var _ poll.Evented = (*Receiver[int])(nil)

// TryRecv returns the next value without blocking. It returns ErrEmpty if
// there is none now, ErrDisconnected once every Sender is closed and every
// value has been returned, and ErrClosed after Close. Each Sender's values
// come out in the order it sent them.
func (r *Receiver[T]) TryRecv() (T, error) {
	var one [1]T
	if r == nil || r.c == nil {
		return one[0], errZeroReceiver
	}
	r.mu.Lock()
	_, owed, err := r.recvLocked(one[:], true)
	r.mu.Unlock()
	if owed > 0 && r.c.capacity > 0 {
		r.c.release(owed)
	}
	return one[0], err
}

// recvLocked fills dst with up to len(dst) values, and says how many of
// them still owe a bounded channel their capacity (see given). It returns
// an error (ErrEmpty, ErrDisconnected, ErrClosed) only if it returns no
// value.
//
// With ahead, it then pops one value ahead, so that R is cleared as soon as
// the last value goes (TryRecv). Drain passes false: it receives until
// recvLocked returns an error, whose path clears R (idle), or settles when
// its caller stops early, so R need not be cleared between its batches.
// Not clearing it there matters for speed when the consumer keeps up with
// the producers: each clear costs the Receiver an atomic write of its
// Registration and the next Send a SetReadiness (a push onto the Poll's
// readiness queue), once per batch rather than once per emptying.
func (r *Receiver[T]) recvLocked(dst []T, ahead bool) (n, owed int, err error) {
	if r.closed {
		return 0, 0, ErrClosed
	}
	n, owed = r.takeInto(dst, !ahead) // a Drain's batch may pace; TryRecv never does
	if n == 0 {
		if r.idle() {
			return 0, 0, ErrDisconnected
		}
		// What idle's re-check found, and anything since.
		if n, owed = r.takeInto(dst, false); n == 0 {
			// That look's reload found nothing, which counts as catching
			// up; but the Receiver stops here, and its next receive (a
			// TryRecv, or a Drain's first batch, after the next Poll)
			// must not start with a spin.
			r.c.q.unpace()
			return 0, 0, ErrEmpty
		}
	}
	if ahead {
		r.popAhead()
	}
	return n, owed, nil
}

// popAhead pops one value ahead if none is, and applies rule C if there is
// none to pop: R is then clear only if nothing is available. Receiver's
// mutex held.
func (r *Receiver[T]) popAhead() {
	if r.aheadAt == len(r.ahead) {
		if v, ok := r.c.pop(); ok {
			r.ahead = append(r.ahead, v)
		} else {
			r.idle()
		}
	}
}

// takeInto moves values into dst: first those ahead, then from the queue,
// which it may first pace for (see segQueue) if pace is set. It returns
// how many it moved, and how many of those owe their capacity (all but
// the handed-back ones, see given).
func (r *Receiver[T]) takeInto(dst []T, pace bool) (n, owed int) {
	var zero T
	for n < len(dst) && r.aheadAt < len(r.ahead) {
		dst[n] = r.ahead[r.aheadAt]
		r.ahead[r.aheadAt] = zero
		r.aheadAt++
		n++
	}
	given := min(n, r.given)
	r.given -= given
	if r.aheadAt == len(r.ahead) {
		r.ahead, r.aheadAt = r.ahead[:0], 0
	}
	if pace && n == 0 {
		r.c.q.pace() // it holds no value, so a spin holds none back
	}
	for n < len(dst) {
		v, ok := r.c.pop()
		if !ok {
			break
		}
		dst[n] = v
		n++
	}
	return n, n - given
}

// idle is rule C of channel.go, called when nothing is available (nothing
// ahead and a Pop found nothing): clear R, then look once more and set R
// again if a value (now ahead) arrived meanwhile or the channel is
// finished. It reports whether the channel is finished; then R stays set
// (rule D).
func (r *Receiver[T]) idle() (finished bool) {
	c := r.c
	// After the re-check's reload too: the consumer stops, so its next
	// batch starts without spinning.
	defer c.q.unpace()
	if r.finished() {
		return true
	}
	if r.aheadAt == len(r.ahead) {
		c.clearR()
		if v, ok := c.pop(); ok {
			r.ahead = append(r.ahead, v)
		} else {
			if !r.finished() {
				return false
			}
			finished = true
		}
	}
	c.setR()
	return finished
}

// finished reports whether the channel is disconnected with no value left
// or coming (see Disconnection in channel.go). It pops after reading
// disconnected; a value it finds goes ahead, and then it reports false.
// Nothing is ahead when it is called.
func (r *Receiver[T]) finished() bool {
	c := r.c
	if !c.disconnected.Load() {
		return false
	}
	if v, ok := c.pop(); ok {
		r.ahead = append(r.ahead, v)
		return false
	}
	return c.q.Len() == 0
}

// Drain returns an iterator over the values the Receiver has now: it stops
// where TryRecv would return an error (ErrEmpty, ErrDisconnected or
// ErrClosed; call TryRecv to learn which). It takes values in batches, one
// lock of the Receiver per batch, so it is the cheapest way to receive.
// Between batches it may spin, for 150 ns to 1 µs, when it has caught up
// with the producers (pacing, in the package documentation).
// If the loop stops early, the values of the batch not yet yielded stay in
// the Receiver for the next receive (in order); a bounded channel has
// already counted them as received (their room is free, and taking them
// later frees none), so until then Len may exceed Cap.
func (r *Receiver[T]) Drain() iter.Seq[T] {
	return func(yield func(T) bool) {
		if r == nil || r.c == nil {
			return
		}
		r.mu.Lock()
		if r.draining { // a Drain in another goroutine has the buffer
			r.mu.Unlock()
			for {
				v, err := r.TryRecv()
				if err != nil || !yield(v) {
					return
				}
			}
		}
		r.draining = true
		if r.batch == nil {
			r.batch = make([]T, drainBatch)
		}
		batch := r.batch
		r.mu.Unlock()
		defer func() {
			r.mu.Lock()
			r.draining = false
			r.c.q.unpace() // the next Drain may come much later
			r.mu.Unlock()
		}()
		var zero T
		for {
			r.mu.Lock()
			n, owed, err := r.recvLocked(batch, false)
			r.mu.Unlock()
			if err != nil {
				return
			}
			if owed > 0 && r.c.capacity > 0 {
				r.c.release(owed)
			}
			for i := range n {
				v := batch[i]
				batch[i] = zero
				if !yield(v) {
					r.stopEarly(batch[i+1 : n])
					return
				}
			}
		}
	}
}

// stopEarly puts the values of a batch that a Drain did not yield back in
// front of the Receiver's values ahead, and clears them from the batch;
// their capacity went back with the batch (given).
// Then it leaves R as TryRecv would have: set if a value is available,
// clear (rule C) if none is, which Drain's batches did not look after.
func (r *Receiver[T]) stopEarly(rest []T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed { // closed during the loop: drop them, as Close did the rest
		clear(rest)
		return
	}
	if len(rest) == 0 {
		r.popAhead()
		return
	}
	ahead := make([]T, 0, len(rest)+len(r.ahead)-r.aheadAt)
	ahead = append(ahead, rest...)
	r.ahead = append(ahead, r.ahead[r.aheadAt:]...)
	r.aheadAt = 0
	r.given += len(rest) // the handed-back values ahead stay in front
	clear(rest)
	r.c.setR()
}

// Len returns the number of values sent and not yet received. A Send in
// progress may be counted before its value can be received. 0 for a zero
// or closed Receiver.
func (r *Receiver[T]) Len() int {
	if r == nil || r.c == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0
	}
	return r.c.q.Len() + len(r.ahead) - r.aheadAt
}

// Close closes the Receiver: later Sends return ErrDisconnected, blocked
// Sends wake up and return it, every Sender becomes Writable|Hup, queued
// values are dropped, and the Receiver's Registration is closed (no Poll
// call started afterwards reports it). Closing twice returns ErrClosed.
func (r *Receiver[T]) Close() error {
	if r == nil || r.c == nil {
		return errZeroReceiver
	}
	c := r.c
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return ErrClosed
	}
	r.closed = true
	c.rxClosed.Store(true)
	clear(r.ahead)
	r.ahead, r.aheadAt, r.given = r.ahead[:0], 0, 0
	for {
		if _, ok := c.pop(); !ok {
			break
		}
	}
	r.mu.Unlock()
	err := r.reg.Close()
	c.closeReceiver()
	return err
}

// Register implements poll.Evented.
func (r *Receiver[T]) Register(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	if r == nil || r.c == nil {
		return errZeroReceiver
	}
	return r.reg.Register(p, t, interest, opts)
}

// Reregister implements poll.Evented.
func (r *Receiver[T]) Reregister(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	if r == nil || r.c == nil {
		return errZeroReceiver
	}
	return r.reg.Reregister(p, t, interest, opts)
}

// Deregister implements poll.Evented.
func (r *Receiver[T]) Deregister(p *poll.Poll) error {
	if r == nil || r.c == nil {
		return errZeroReceiver
	}
	return r.reg.Deregister(p)
}
