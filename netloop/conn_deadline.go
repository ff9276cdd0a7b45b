package netloop

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/unipoll/unipoll/eventloop"
)

// Errors of connection deadlines, reported to CloseHandler.Closed.
var (
	// ErrReadTimeout: no input arrived for Config.ReadTimeout while the
	// Conn was reading.
	ErrReadTimeout = errors.New("unipoll: netloop: read timeout")
	// ErrIdleTimeout: neither input arrived nor output left for
	// Config.IdleTimeout.
	ErrIdleTimeout = errors.New("unipoll: netloop: idle timeout")
	// ErrWriteTimeout: queued output made no progress for
	// Config.WriteTimeout (the peer stopped reading).
	ErrWriteTimeout = errors.New("unipoll: netloop: write timeout")
)

// A Conn's deadlines are one eventloop.Loop.AfterFunc at a time, on the
// timing wheel of its Loop's Poll, one timeout per Conn whatever its
// traffic: reads and writes only note the time, and when the timeout
// expires the Conn's next call compares the notes with the limits,
// closing the Conn or setting the timeout again for what is left. A busy
// Conn thus costs the wheel one timeout per period, not one per read.
//
// Invariants:
//  1. The limits in force (Conn.cfg's ReadTimeout, IdleTimeout,
//     WriteTimeout) and the notes (lastRead, lastActive, lastWrite,
//     writing) are the Conn's calls' alone (and Add's, before the first
//     call).
//  2. Any goroutine asks for new limits by storing them in read, idle and
//     write and setting dlChanged, then triggering the Conn; its next call
//     takes them (applyTimeouts). A store always precedes its flag, and the
//     call swaps the flags before it loads the limits, so no request is
//     lost: one that comes after the swap sets the flag again.
//  3. At most one AfterFunc is pending: setDeadline cancels the one it
//     replaces, under mu. A stale expiry only sets dlDue, which makes the
//     next call check early and set the timeout again.
//  4. The expiry runs on whichever worker takes the Loop's timer; it only
//     sets dlDue and triggers a call, so that the Conn's state is touched
//     in its own calls alone.
type connDeadline struct {
	flags atomic.Uint32 // dlDue | dlChanged

	read, idle, write atomic.Int64 // the limits asked for (invariant 2)

	mu     sync.Mutex            // guards fire, cancel and off: Add, the Conn's calls, and Removed set them
	fire   func(*eventloop.Loop) // deadlineDue, made at the first use
	cancel func() bool           // the AfterFunc set last
	off    bool                  // removed: set nothing more

	lastRead   mono // the Conn's calls only (invariant 1)
	lastActive mono
	lastWrite  mono // the last progress of queued output, or when it began to wait
	writing    bool // output is queued: lastWrite counts
}

// mono is a reading of the monotonic clock, in nanoseconds since the
// package started: 8 bytes where a time.Time takes 24, three of them in
// every Conn.
type mono int64

// monoStart is what mono counts from.
var monoStart = time.Now()

// monoNow reads the monotonic clock.
func monoNow() mono { return mono(time.Since(monoStart)) }

// sub is the time from o to m.
func (m mono) sub(o mono) time.Duration { return time.Duration(m - o) }

// The bits of connDeadline.flags.
const (
	dlDue     = 1 << iota // the timeout expired: check the limits
	dlChanged             // a setter asked for new limits
)

// deadlineDue is the AfterFunc of the Conn's deadlines.
func (c *Conn) deadlineDue(l *eventloop.Loop) {
	c.dl.flags.Or(dlDue)
	_ = l.Trigger(c.tok) // fails only if the Conn is being removed
}

// SetReadTimeout changes Config.ReadTimeout for this Conn; 0 removes the
// limit. It may be called from any goroutine, and takes effect in the
// Conn's next call (which it triggers). A limit set where there was none
// counts from then; a changed one applies to the time already counted, so
// a shorter limit may close the Conn at once. It returns an error matching
// ErrInvalidArgument for a negative d, ErrClosed once the Conn is closed.
func (c *Conn) SetReadTimeout(d time.Duration) error {
	return c.setTimeout("SetReadTimeout", func(dl *connDeadline) *atomic.Int64 { return &dl.read }, d)
}

// SetIdleTimeout changes Config.IdleTimeout for this Conn, as
// SetReadTimeout does ReadTimeout.
func (c *Conn) SetIdleTimeout(d time.Duration) error {
	return c.setTimeout("SetIdleTimeout", func(dl *connDeadline) *atomic.Int64 { return &dl.idle }, d)
}

// SetWriteTimeout changes Config.WriteTimeout for this Conn, as
// SetReadTimeout does ReadTimeout.
func (c *Conn) SetWriteTimeout(d time.Duration) error {
	return c.setTimeout("SetWriteTimeout", func(dl *connDeadline) *atomic.Int64 { return &dl.write }, d)
}

// setTimeout asks for limit (a field of c.dl, named once c is known not
// to be nil) to become d.
func (c *Conn) setTimeout(op string, limit func(*connDeadline) *atomic.Int64, d time.Duration) error {
	if c.zero() {
		return errZeroConn
	}
	if d < 0 {
		return fmt.Errorf("%w: netloop: %s(%v): negative timeout", ErrInvalidArgument, op, d)
	}
	c.asyncMu.Lock()
	closed := c.asyncClosed
	c.asyncMu.Unlock()
	if closed {
		return ErrClosed
	}
	limit(&c.dl).Store(int64(d))
	c.dl.flags.Or(dlChanged)
	_ = c.l.Trigger(c.tok) // fails only if the Conn is being removed
	return nil
}

// startDeadlines runs in Add: the limits asked for are cfg's, and the
// clocks start at now.
func (c *Conn) startDeadlines(now mono) {
	c.dl.read.Store(int64(c.cfg.ReadTimeout))
	c.dl.idle.Store(int64(c.cfg.IdleTimeout))
	c.dl.write.Store(int64(c.cfg.WriteTimeout))
	c.dl.lastRead, c.dl.lastActive = now, now
}

// applyTimeouts takes the limits the setters asked for. A clock that was
// not kept (no limit needed it) starts now.
func (c *Conn) applyTimeouts(now mono) {
	read := time.Duration(c.dl.read.Load())
	idle := time.Duration(c.dl.idle.Load())
	write := time.Duration(c.dl.write.Load())
	// noteRead keeps lastRead while either limit is on; noteWrite keeps
	// lastActive only while IdleTimeout is.
	if c.cfg.ReadTimeout|c.cfg.IdleTimeout == 0 && read != 0 {
		c.dl.lastRead = now
	}
	if c.cfg.IdleTimeout == 0 && idle != 0 {
		c.dl.lastActive = now
	}
	if c.cfg.WriteTimeout == 0 && write != 0 {
		c.dl.writing, c.dl.lastWrite = c.outputWaits(), now
	}
	if read != c.cfg.ReadTimeout || idle != c.cfg.IdleTimeout || write != c.cfg.WriteTimeout {
		cfg := *c.cfg // shared with other Conns (loopState.intern): copied before a change
		cfg.ReadTimeout, cfg.IdleTimeout, cfg.WriteTimeout = read, idle, write
		c.cfg = &cfg
	}
}

// setDeadline sets the Conn's timeout to expire in d, replacing the one
// pending (invariant 3).
func (c *Conn) setDeadline(d time.Duration) {
	c.dl.mu.Lock()
	defer c.dl.mu.Unlock()
	if c.dl.off {
		return
	}
	if c.dl.cancel != nil {
		c.dl.cancel()
		c.dl.cancel = nil
	}
	if d == 0 {
		return // no limit left
	}
	if c.dl.fire == nil {
		c.dl.fire = c.deadlineDue
	}
	cancel, err := c.l.AfterFunc(d, c.dl.fire)
	if err != nil {
		return // the Loop is closing: the Conn goes with it
	}
	c.dl.cancel = cancel
}

// firstDeadline is Add's setDeadline: the Conn's first call may have set
// one already (its handler changed a limit), which stands.
func (c *Conn) firstDeadline(d time.Duration) {
	c.dl.mu.Lock()
	set := c.dl.cancel != nil
	c.dl.mu.Unlock()
	if !set {
		c.setDeadline(d)
	}
}

// stopDeadline cancels the timeout for good (the Conn is removed).
func (c *Conn) stopDeadline() {
	c.dl.mu.Lock()
	defer c.dl.mu.Unlock()
	c.dl.off = true
	if c.dl.cancel != nil {
		c.dl.cancel()
	}
}

// noteRead records input for the deadlines.
func (c *Conn) noteRead() {
	if c.cfg.ReadTimeout|c.cfg.IdleTimeout != 0 {
		now := monoNow()
		c.dl.lastRead, c.dl.lastActive = now, now
	}
}

// noteWrite records a write of n bytes of the queue (n may be 0: the
// socket was full) for the deadlines.
func (c *Conn) noteWrite(n int) {
	if n > 0 && c.cfg.IdleTimeout > 0 {
		c.dl.lastActive = monoNow()
	}
	if c.cfg.WriteTimeout > 0 {
		waiting := c.outputWaits()
		if waiting && (n > 0 || !c.dl.writing) {
			c.dl.lastWrite = monoNow()
		}
		c.dl.writing = waiting
	}
}

// outputWaits reports output waiting for the socket to take it: queued
// (with a TLS Conn's own records), or, in a relay, bytes the socket did
// not take (the sink waits for Writable). WriteTimeout counts while it
// does.
func (c *Conn) outputWaits() bool { return c.queued() > 0 || c.rl.blocked }

// readResumed restarts the ReadTimeout's clock: the time the Conn did
// not read (PauseRead, back pressure) is not the peer's.
func (c *Conn) readResumed() {
	if c.cfg.ReadTimeout > 0 {
		c.dl.lastRead = monoNow()
	}
}

// checkDeadlines runs at the end of each call of the Conn; it acts only
// after its timeout expired or a setter asked for new limits: it fails
// the Conn if a limit has passed, and otherwise sets the timeout for the
// nearest limit.
func (c *Conn) checkDeadlines() {
	if c.dl.flags.Load() == 0 {
		return
	}
	flags := c.dl.flags.Swap(0)
	now := monoNow()
	if flags&dlChanged != 0 {
		c.applyTimeouts(now)
	}
	if c.failed || c.closed {
		return
	}
	next := time.Duration(1<<63 - 1)
	if t := c.cfg.ReadTimeout; t > 0 {
		// Only while reading: not reading is the Conn's choice (PauseRead,
		// back pressure) or the peer's end of input, not a silent peer.
		left := t
		if c.reading() {
			left = t - now.sub(c.dl.lastRead)
		}
		if left <= 0 {
			c.fail(ErrReadTimeout)
			return
		}
		next = min(next, left)
	}
	if t := c.cfg.IdleTimeout; t > 0 {
		left := t - now.sub(c.dl.lastActive)
		if left <= 0 {
			c.fail(ErrIdleTimeout)
			return
		}
		next = min(next, left)
	}
	if t := c.cfg.WriteTimeout; t > 0 {
		// Only while output waits: with nothing queued, nothing is late.
		left := t
		if c.outputWaits() {
			left = t - now.sub(c.dl.lastWrite)
		}
		if left <= 0 {
			c.fail(ErrWriteTimeout)
			return
		}
		next = min(next, left)
	}
	if next == 1<<63-1 {
		next = 0 // no limit: setDeadline cancels the pending one
	}
	c.setDeadline(next)
}
