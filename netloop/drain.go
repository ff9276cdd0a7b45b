package netloop

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/unipoll/unipoll/eventloop"
)

// DrainHandler is told, in the Conn's own call, when a graceful shutdown
// (Group.Shutdown, Shutdown) begins: the handler finishes the Conn its
// own way (answers what it has read, says goodbye in its protocol, then
// Close), and the Conn keeps reading and writing meanwhile. Without it,
// the Conn is closed as by Close: reading stops at once, and it closes
// once its queued output is written; but a Conn that relays (Relay) is
// left to finish, since a Close would drop the bytes in flight: the pair
// closes when both directions have ended. Either way a Conn still open at
// the shutdown's deadline is ended with Abort.
type DrainHandler interface {
	Draining(c *Conn)
}

// drain is how a Conn hears that a drain has begun; it runs in the Conn's
// call (through Async), once.
func (c *Conn) drain() {
	if c.drained || c.closing || c.failed || c.closed {
		return
	}
	c.drained = true
	if d, ok := c.h.(DrainHandler); ok {
		d.Draining(c)
		return
	}
	if c.rl.pending() {
		return // a relay ends by itself, or at the deadline
	}
	c.Close()
}

// Timing of a drain.
const (
	// drainRecheck is how often a drain looks again without being woken:
	// a wake-up comes when a Loop's last Conn closes, but not when a
	// hand-off ends without a Conn (the accept function closed it), nor
	// for what else may hold the Loops' Conns up.
	drainRecheck = 20 * time.Millisecond
	// abortGrace bounds the wait, after the deadline, for the Loops to end
	// the Conns left: only a Loop that does not run (or a handler that
	// does not return) takes that long, and Close ends them then.
	abortGrace = time.Second
)

// drainer drains the Conns of some Loops and then stops the Loops; it is
// the part that Group.Shutdown and Shutdown share.
type drainer struct {
	loops   []*eventloop.Loop
	log     *slog.Logger
	pending func() int64 // connections handed to a Loop, not yet added; nil: none
}

// run tells every Conn of the Loops that the drain has begun, waits for
// them to close (or ctx to end, then ends the rest with Abort), stops the
// Loops, and returns nil when everything drained, ctx's error otherwise.
// A second run, while a first waits or after it, waits for the same
// Conns with its own ctx; once the Loops are stopped it returns what the
// run that stopped them returned.
func (d drainer) run(ctx context.Context) error {
	start := time.Now()
	states := make([]*loopState, len(d.loops))
	told, began := 0, false
	for i, l := range d.loops {
		states[i] = stateOf(l)
		n, first := states[i].beginDrain()
		told += n
		began = began || first
	}
	if began {
		logIfSet(d.log, slog.LevelInfo, "netloop: drain begun", "conns", told, "loops", len(d.loops))
	}
	wake := make(chan struct{}, 1)
	for _, s := range states {
		defer s.watch(wake)()
	}
	tick := time.NewTicker(drainRecheck)
	defer tick.Stop()
	for !d.idle(states) {
		select {
		case <-states[0].finished:
			return states[0].finishErr
		case <-wake:
		case <-tick.C:
		case <-ctx.Done():
			cause := fmt.Errorf("netloop: drain cut short: %w", context.Cause(ctx))
			left := 0
			for _, s := range states {
				s.decide(ctx.Err()) // before the aborts, which may let another run see the drain over
				left += s.abortAll(cause)
			}
			for _, l := range d.loops {
				dialsOf(l).endAll(cause)
			}
			logIfSet(d.log, slog.LevelInfo, "netloop: drain forced", "conns", told, "left", left,
				"duration", time.Since(start))
			d.waitAborted(states, wake)
			return d.finish(states, ctx.Err())
		}
	}
	err := d.finish(states, nil)
	if began && err == nil { // not when another run forced it
		logIfSet(d.log, slog.LevelInfo, "netloop: drain finished", "conns", told, "duration", time.Since(start))
	}
	return err
}

// idle reports that no Conn is left on the Loops, nor on its way to one:
// handed over by a listener, or dialed (a dial in flight may bring one,
// and its done must run while the Loop still does).
func (d drainer) idle(states []*loopState) bool {
	if d.pending != nil && d.pending() > 0 {
		return false
	}
	for _, s := range states {
		if s.conns.Load() > 0 {
			return false
		}
	}
	for _, l := range d.loops {
		if dialsOf(l).inFlight() > 0 {
			return false
		}
	}
	return true
}

// waitAborted waits, at most abortGrace, for the Loops to end the Conns
// abortAll was given, so that they end as Abort ends them (with a reset)
// rather than with the Loop's Close.
func (d drainer) waitAborted(states []*loopState, wake chan struct{}) {
	limit := time.NewTimer(abortGrace)
	defer limit.Stop()
	tick := time.NewTicker(drainRecheck)
	defer tick.Stop()
	for !d.idle(states) {
		select {
		case <-wake:
		case <-tick.C:
		case <-limit.C:
			return
		}
	}
}

// finish records err as the drain's result (unless a run that forced
// it, or finished first, decided it) and stops the Loops, so that their
// Runs return.
func (d drainer) finish(states []*loopState, err error) error {
	for _, s := range states {
		s.finish(err)
	}
	for _, l := range d.loops {
		l.Shutdown()
	}
	return states[0].finishErr
}

// Shutdown drains l's Conns and stops l, as Group.Shutdown does for a
// Group, for a Loop that is not part of one: every Conn hears that a
// drain has begun (DrainHandler; without it, Close), and Shutdown waits
// for them to close, and for the dials in flight on l to end (a dial that
// connects brings a Conn, drained too). At ctx's end the Conns left are
// ended with Abort, and the dials left with the same error. Then l is
// shut down (eventloop.Loop.Shutdown), so its Run returns.
// Listeners and other sources the caller put on l are the caller's to
// close first (a Group's are closed by Group.Shutdown).
//
// It returns nil when every Conn closed by itself, ctx's error when ctx
// ended first, and an error matching ErrClosed if l was closed. Conns
// added during the drain are drained too. l must be running (Run) for the
// drain to make progress. A second Shutdown, during or after the first,
// waits for the same drain with its own ctx, and after the first has
// stopped l, returns its result.
func Shutdown(ctx context.Context, l *eventloop.Loop) error {
	if l == nil || l.Poll() == nil {
		return fmt.Errorf("%w: netloop: Shutdown of a nil or zero eventloop.Loop", ErrInvalidArgument)
	}
	if ctx == nil {
		return fmt.Errorf("%w: netloop: Shutdown needs a context", ErrInvalidArgument)
	}
	// Post fails only once l is closed: its Conns are gone, undrained.
	if err := l.Post(func(*eventloop.Loop) {}); err != nil {
		return fmt.Errorf("netloop: Shutdown of a closed Loop: %w", err)
	}
	return drainer{loops: []*eventloop.Loop{l}}.run(ctx)
}

// logIfSet writes a record to log, if there is one.
func logIfSet(log *slog.Logger, level slog.Level, msg string, args ...any) {
	if log != nil {
		log.Log(context.Background(), level, msg, args...)
	}
}
