package channel

import (
	"sync/atomic"

	"golang.org/x/sys/cpu"

	"github.com/unipoll/unipoll/poll"
)

// Sender is the sending end of a channel. It is safe for concurrent use by
// any number of goroutines; Clone gives each producer a handle of its own
// (its own Registration and cache line), and the channel is disconnected
// when the last handle closes.
//
// A Sender is a poll.Evented for Writable, each with its own Registration,
// so clones may be driven by different Polls. Like a socket, a Sender is
// Writable until one of its own Sends fills a bounded channel or finds it
// full (TrySend returns ErrFull), and Writable again once room appears:
// under Edge that is one event each time room appears after it found the
// channel full, under Level an event on every Poll call while it is
// Writable. A Sender of an unbounded channel is always Writable. When the
// Receiver closes, every Sender becomes Writable|Hup (Hup reported if the
// interest has it), and its Sends return ErrDisconnected.
//
// The zero Sender is not usable: its methods return an error wrapping
// ErrInvalidArgument (Cap returns 0). Make Senders with New, NewBounded or
// Clone.
type Sender[T any] struct {
	c       *core[T]
	reg     *poll.Registration
	set     *poll.SetReadiness
	wanting bool // in c.wanters; guarded by c.mu

	// state: sClosed, sFinished and the number of operations in progress.
	// On a line of its own: the Receiver is allocated in the same size
	// class, and every Send writes this word.
	_       cpu.CacheLinePad
	state   atomic.Uint64
	relSeen atomic.Uint64 // see segQueue.reserveWithin
	_       cpu.CacheLinePad
}

const (
	sClosed   = uint64(1) << 62
	sFinished = uint64(1) << 61
)

var _ poll.Evented = (*Sender[int])(nil)

// enter starts an operation: it fails if the Sender is zero or closed.
func (s *Sender[T]) enter() error {
	if s == nil || s.c == nil {
		return errZeroSender
	}
	if s.state.Add(1)&sClosed != 0 {
		s.leave()
		return ErrClosed
	}
	return nil
}

// leave ends an operation; the last one out of a closed Sender finishes it.
func (s *Sender[T]) leave() {
	if s.state.Add(^uint64(0)) == sClosed && s.state.CompareAndSwap(sClosed, sClosed|sFinished) {
		s.finish()
	}
}

// finish runs once per Sender, when it is closed and idle.
func (s *Sender[T]) finish() {
	c := s.c
	c.mu.Lock()
	delete(c.all, s)
	c.unwantLocked(s)
	c.mu.Unlock()
	_ = s.reg.Close()
	if c.senders.Add(-1) == 0 {
		c.disconnected.Store(true)
		_ = c.rxSet.SetReadiness(poll.Readable | poll.Hup)
	}
}

// Send queues v for the Receiver. On an unbounded channel it never blocks.
// On a bounded one it blocks while the channel is full, until there is room,
// the Receiver closes (ErrDisconnected) or this Sender is closed
// (ErrClosed); a blocked Send sleeps, it does not spin.
//
// It returns ErrDisconnected if the Receiver is closed and ErrClosed after
// Close. A value sent while the Receiver is closing may be dropped.
func (s *Sender[T]) Send(v T) error {
	return s.sendOp(v, true)
}

// TrySend is Send without blocking: on a full bounded channel it returns
// ErrFull, and the Sender is reported Writable once room appears.
func (s *Sender[T]) TrySend(v T) error {
	return s.sendOp(v, false)
}

// sendOp is Send and TrySend. A Send holds no operation count: the
// queue's abort covers a Send that races Close (see Disconnection in
// channel.go), and a read of the closed bit covers the rest.
func (s *Sender[T]) sendOp(v T, block bool) error {
	if s == nil || s.c == nil {
		return errZeroSender
	}
	if s.state.Load()&sClosed != 0 {
		return ErrClosed
	}
	return s.send(v, block)
}

func (s *Sender[T]) send(v T, block bool) error {
	c := s.c
	if c.rxClosed.Load() {
		return ErrDisconnected
	}
	sl, ok, filled := c.take(s)
	if !ok {
		if !block {
			s.noRoom()
			return ErrFull
		}
		var err error
		if sl, filled, err = s.waitRoom(); err != nil {
			return err
		}
	}
	if filled {
		s.noRoom()
	}
	return c.put(sl, v)
}

// waitRoom blocks until room is reserved, the Receiver closes or s is
// closed.
func (s *Sender[T]) waitRoom() (sl slot[T], filled bool, err error) {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if c.rxClosed.Load() {
			return sl, false, ErrDisconnected
		}
		if s.state.Load()&sClosed != 0 {
			return sl, false, ErrClosed
		}
		sl, ok, filled := c.take(s)
		if ok {
			c.passLocked()
			return sl, filled, nil
		}
		c.sleepers++
		c.waiting.Add(1)
		// The second look (Capacity in channel.go).
		if sl, ok, filled = c.take(s); ok {
			c.sleepers--
			c.waiting.Add(-1)
			c.passLocked()
			return sl, filled, nil
		}
		c.cond.Wait() // whoever wakes us has stopped counting us
	}
}

// noRoom clears Writable on s and puts it on the waiting list, then looks
// at the room again (see Capacity in channel.go).
func (s *Sender[T]) noRoom() {
	c := s.c
	_ = s.set.UnsetReadiness(poll.Writable)
	c.mu.Lock()
	if s.state.Load()&sFinished == 0 {
		c.wantLocked(s)
	}
	c.mu.Unlock()
	if c.used() < c.capacity || c.rxClosed.Load() {
		_ = s.set.SetReadiness(poll.Writable)
	}
}

// Clone returns a new Sender for the same channel. The Receiver is
// disconnected only once every Sender, clones included, is closed.
func (s *Sender[T]) Clone() (*Sender[T], error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	s.c.senders.Add(1)
	return s.c.newSender(), nil
}

// Close closes this Sender: its later calls return ErrClosed, and a Send of
// it blocked on a full channel returns ErrClosed. When the last Sender of
// the channel is closed, the Receiver becomes Readable|Hup and TryRecv
// returns ErrDisconnected once it has returned every value sent. A Send
// that races the Close of its own Sender either delivers its value before
// ErrDisconnected or returns ErrClosed. Closing twice returns ErrClosed.
func (s *Sender[T]) Close() error {
	if s == nil || s.c == nil {
		return errZeroSender
	}
	for {
		old := s.state.Load()
		if old&sClosed != 0 {
			return ErrClosed
		}
		if s.state.CompareAndSwap(old, old|sClosed) {
			break
		}
	}
	// Wake a blocked Send of ours so that it sees the closed bit and
	// returns. (With the built-in queue a Send holds no operation count,
	// so it may be blocked even when none is counted.)
	if s.c.capacity > 0 {
		s.c.mu.Lock()
		s.c.broadcastLocked()
		s.c.mu.Unlock()
	}
	// If operations are in progress, the last to leave finishes.
	if s.state.CompareAndSwap(sClosed, sClosed|sFinished) {
		s.finish()
	}
	return nil
}

// Cap returns the capacity of a bounded channel, and 0 for an unbounded one
// or a zero Sender.
func (s *Sender[T]) Cap() int {
	if s == nil || s.c == nil {
		return 0
	}
	return int(s.c.capacity)
}

// Register implements poll.Evented: s is reported Writable as the Sender
// type describes.
func (s *Sender[T]) Register(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	if s == nil || s.c == nil {
		return errZeroSender
	}
	return s.reg.Register(p, t, interest, opts)
}

// Reregister implements poll.Evented.
func (s *Sender[T]) Reregister(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	if s == nil || s.c == nil {
		return errZeroSender
	}
	return s.reg.Reregister(p, t, interest, opts)
}

// Deregister implements poll.Evented.
func (s *Sender[T]) Deregister(p *poll.Poll) error {
	if s == nil || s.c == nil {
		return errZeroSender
	}
	return s.reg.Deregister(p)
}
