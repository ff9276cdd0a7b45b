package timer

import (
	"fmt"
	"time"
)

// Option configures New.
type Option func(*config) error

type config struct {
	tick     time.Duration
	capacity int
}

// Tick sets the Timer's resolution: deadlines are rounded up to a multiple
// of d, counted from the Poll's creation, so that timeouts set close
// together, inside one such window, expire together at its end: one
// wake-up of the Poll, one Drain. A d at or below the Poll's WheelTick
// (1ms by default) means the Poll's tick, which is also the default; a d
// that is not a multiple of the WheelTick is rounded up to one, since the
// wheel fires only at the start of a tick. A negative d is an error.
//
// There is no option for the number of slots, as mio-extras had: a Timer's
// timeouts live in its Poll's one hierarchical wheel, whose slots per level
// are poll.Config.WheelSlots.
func Tick(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("%w: timer.Tick(%v): negative", ErrInvalidArgument, d)
		}
		c.tick = d
		return nil
	}
}

// Capacity bounds the number of timeouts a Timer holds, pending or expired
// and not yet taken: Set returns ErrFull past it. Zero, the default, means
// no bound. A negative n is an error.
func Capacity(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("%w: timer.Capacity(%d): negative", ErrInvalidArgument, n)
		}
		c.capacity = n
		return nil
	}
}
