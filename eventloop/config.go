package eventloop

import (
	"fmt"

	"github.com/unipoll/unipoll/poll"
)

// Config tunes a Loop. The zero value is valid and means the defaults.
type Config struct {
	// Poll configures the Loop's Poll (backend, timing wheel).
	Poll poll.Config
	// Events is how many events one Poll call may return. Default 256.
	Events int
	// MaxEventsPerIteration caps the handler calls for source events in
	// one iteration (one Poll call and what follows it). Sources that are
	// ready beyond the cap wait in the Loop's run queue, in priority
	// order, for the following iterations, while newly ready sources of
	// higher priority go before them: priority is strict across
	// iterations, and no ready source is lost. 0 means no cap other than
	// MaxDispatchPerIteration.
	MaxEventsPerIteration int
	// MaxDispatchPerIteration caps the work of one iteration, handler calls
	// and posted functions together, before the Loop polls the operating
	// system again, so that a flood of posted functions, an always-ready
	// source or a handler that keeps asking for Again cannot keep the
	// others waiting. Default 1024.
	MaxDispatchPerIteration int
	// ReadBuffer is the size of the read buffer each worker lends the
	// handlers it calls (Loop.ReadBuffer): netloop's Conns read into it,
	// and keep input in a buffer of their own only while their handler
	// leaves some unconsumed. Default 64 KiB.
	ReadBuffer int
	// Workers is how many goroutines serve the Loop during Run: the
	// caller's and Workers-1 more. One polls at a time (leader and
	// followers); the others run handlers, and a handler still never runs
	// concurrently with itself. Default 1.
	Workers int
}

// Defaults.
const (
	DefaultEvents                  = 256
	DefaultMaxDispatchPerIteration = 1024
	DefaultReadBuffer              = 64 << 10
)

// maxWorkers bounds Config.Workers: more goroutines than that serving one
// Poll only queue up behind it.
const maxWorkers = 1024

func (c Config) withDefaults() (Config, error) {
	if c.Events < 0 || c.MaxEventsPerIteration < 0 || c.MaxDispatchPerIteration < 0 || c.ReadBuffer < 0 ||
		c.Workers < 0 || c.Workers > maxWorkers {
		return c, fmt.Errorf("%w: eventloop config: Events %d, MaxEventsPerIteration %d, MaxDispatchPerIteration %d, Workers %d (none may be negative; Workers at most %d)",
			ErrInvalidArgument, c.Events, c.MaxEventsPerIteration, c.MaxDispatchPerIteration, c.Workers, maxWorkers)
	}
	if c.Events == 0 {
		c.Events = DefaultEvents
	}
	if c.MaxDispatchPerIteration == 0 {
		c.MaxDispatchPerIteration = DefaultMaxDispatchPerIteration
	}
	if c.MaxEventsPerIteration == 0 || c.MaxEventsPerIteration > c.MaxDispatchPerIteration {
		c.MaxEventsPerIteration = c.MaxDispatchPerIteration
	}
	if c.ReadBuffer == 0 {
		c.ReadBuffer = DefaultReadBuffer
	}
	if c.Workers == 0 {
		c.Workers = 1
	}
	return c, nil
}
