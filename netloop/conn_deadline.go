package netloop

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/unipoll/unipoll/eventloop"
)

// Errors of connection deadlines, reported to CloseHandler.Closed.
var (
	// ErrReadTimeout: no input arrived for Config.ReadTimeout.
	ErrReadTimeout = errors.New("unipoll: netloop: read timeout")
	// ErrIdleTimeout: neither input arrived nor output left for
	// Config.IdleTimeout.
	ErrIdleTimeout = errors.New("unipoll: netloop: idle timeout")
)

// A Conn's deadlines are one eventloop.Loop.AfterFunc at a time, on the
// timing wheel of its Loop's Poll, one timeout per Conn whatever its
// traffic: reads and writes only note the time, and when the timeout
// expires the Conn's next call compares the notes with the limits,
// closing the Conn or setting the timeout again for what is left. A busy
// Conn thus costs the wheel one timeout per period, not one per read.
//
// The expiry runs on whichever worker takes the Loop's timer; it only
// marks the Conn (due) and triggers a call of it, so that the Conn's state
// is touched in its own calls alone.
type connDeadline struct {
	due  atomic.Bool
	fire func(*eventloop.Loop) // deadlineDue, made once per Conn

	mu     sync.Mutex  // guards cancel and off: set by Add, by the Conn's calls, and cancelled by Removed
	cancel func() bool // the AfterFunc set last
	off    bool        // removed: set nothing more

	lastRead   time.Time // the Conn's calls only
	lastActive time.Time
}

// deadlineDue is the AfterFunc of the Conn's deadlines.
func (c *Conn) deadlineDue(l *eventloop.Loop) {
	c.dl.due.Store(true)
	_ = l.Trigger(c.tok) // fails only if the Conn is being removed
}

// hasDeadlines reports whether the Conn has a deadline to keep.
func (c *Conn) hasDeadlines() bool { return c.cfg.ReadTimeout > 0 || c.cfg.IdleTimeout > 0 }

// setDeadline sets the Conn's timeout to expire in d.
func (c *Conn) setDeadline(d time.Duration) {
	c.dl.mu.Lock()
	defer c.dl.mu.Unlock()
	if c.dl.off {
		return
	}
	cancel, err := c.l.AfterFunc(d, c.dl.fire)
	if err != nil {
		return // the Loop is closing: the Conn goes with it
	}
	c.dl.cancel = cancel
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

// noteRead and noteWrite record progress for the deadlines.
func (c *Conn) noteRead() {
	if c.hasDeadlines() {
		now := time.Now()
		c.dl.lastRead, c.dl.lastActive = now, now
	}
}

func (c *Conn) noteWrite() {
	if c.cfg.IdleTimeout > 0 {
		c.dl.lastActive = time.Now()
	}
}

// checkDeadlines runs in the Conn's call after its timeout expired: it
// fails the Conn if a limit has passed, and otherwise sets the timeout for
// the nearest limit.
func (c *Conn) checkDeadlines() {
	if !c.dl.due.Swap(false) {
		return
	}
	now := time.Now()
	next := time.Duration(1<<63 - 1)
	if t := c.cfg.ReadTimeout; t > 0 {
		left := t - now.Sub(c.dl.lastRead)
		if left <= 0 {
			c.fail(ErrReadTimeout)
			return
		}
		next = min(next, left)
	}
	if t := c.cfg.IdleTimeout; t > 0 {
		left := t - now.Sub(c.dl.lastActive)
		if left <= 0 {
			c.fail(ErrIdleTimeout)
			return
		}
		next = min(next, left)
	}
	c.setDeadline(next)
}
