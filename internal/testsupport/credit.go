package testsupport

import "sync/atomic"

// Credit is the flow control of a notification-throughput benchmark: the
// consumer publishes how many notifications it has accounted for, and a
// producer that is a window ahead parks until the consumer catches up, as a
// sender on a full Go channel does (a spinning producer would hold a core
// that the consumer may need on a loaded machine).
//
// Protocol: the producer announces that it parks (waiting) and then looks
// at the count once more; the consumer stores its count before it looks at
// waiting. So one of the two sees the other, and a producer never sleeps
// past a count that lets it go on.
type Credit struct {
	consumed atomic.Uint64
	_        [56]byte // keeps the consumer's counter off the producer's line
	waiting  atomic.Bool
	wake     chan struct{} // capacity 1
	window   uint64
	allowed  uint64 // the consumer's count when the producer last looked; producer only
}

// NewCredit returns a Credit that lets the producer run window
// notifications ahead of the consumer.
func NewCredit(window uint64) *Credit {
	return &Credit{wake: make(chan struct{}, 1), window: window}
}

// Take returns once the producer may make notification i (counted from
// 0): at once while it is less than a window ahead of the count it last
// saw, else once the consumer has published a count that allows it.
// Producer only.
func (c *Credit) Take(i uint64) {
	if i-c.allowed >= c.window { // kept this small so that it inlines
		c.park(i)
	}
}

// park waits for a count that allows notification i.
func (c *Credit) park(i uint64) {
	for {
		if n := c.consumed.Load(); i-n < c.window {
			c.allowed = n
			return
		}
		c.waiting.Store(true)
		if n := c.consumed.Load(); i-n < c.window {
			c.waiting.Store(false)
			c.allowed = n
			return
		}
		<-c.wake
	}
}

// Publish records that the consumer has accounted for n notifications and
// unparks the producer if it waits. Consumer only.
func (c *Credit) Publish(n uint64) {
	c.consumed.Store(n)
	if c.waiting.Load() && c.waiting.CompareAndSwap(true, false) {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}
