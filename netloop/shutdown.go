package netloop

import (
	"context"
	"errors"
	"fmt"
)

// Shutdown ends the Group gracefully, as net/http's Server.Shutdown does
// a server:
//
//  1. Every Listener closes at once, so a client that connects from then
//     on is refused, not accepted and then reset; ListenTCP and the
//     others refuse new ones (ErrClosed). (Connections the kernel has
//     completed but the listener not yet accepted when it closes are
//     reset by the kernel, as with any listener that closes.)
//  2. Every Conn on the Group's Loops hears that a drain has begun, in its
//     own call: a DrainHandler finishes it its own way; without one it is
//     closed as by Conn.Close (reading stops, and it closes once its
//     queued output is written). Conns added during the drain (a hand-off
//     from a listener still in flight, a dial that completes) drain too.
//  3. Shutdown waits for them all to close, and for the dials in flight
//     on the Loops (Dialer.Dial) to end, so that every dial's done runs
//     while the Loops still do. When ctx ends first, the Conns left are
//     ended with Abort (their CloseHandler hears an error matching ctx's),
//     their queued output dropped, and the dials left end with the same
//     error.
//  4. The Loops are shut down, so Run returns.
//
// It returns nil when everything drained, ctx's error when ctx ended
// first. The Loops must be running (Run) for the drain to make progress;
// a ctx without deadline waits as long as the Conns take. (Before Run,
// a Group with no Conns has nothing to drain: its Loops stop at once, and
// a later Run returns nil at once.) Shutdown may be
// called from any goroutine except a handler of the Group's Loops (it
// waits for them). A second Shutdown, during the first, waits for the
// same drain with its own ctx (each forces it at its own deadline); after
// the first has stopped the Loops, it returns the first's result.
// Shutdown after Close, and a Shutdown that Close interrupts, return an
// error matching ErrClosed: Close dropped what was queued. Close the
// Group after Shutdown to release its Loops.
func (g *Group) Shutdown(ctx context.Context) error {
	if g == nil || len(g.loops) == 0 {
		return errZeroGroup
	}
	if ctx == nil {
		return fmt.Errorf("%w: netloop: Shutdown needs a context", ErrInvalidArgument)
	}
	if g.closed.Load() {
		return fmt.Errorf("netloop: Shutdown after Group.Close: %w", ErrClosed)
	}
	errs := []error{g.closeListeners()}
	errs = append(errs, drainer{loops: g.loops, log: g.log, pending: g.pendingAll}.run(ctx))
	if g.closed.Load() {
		errs = append(errs, fmt.Errorf("netloop: Group.Close during Shutdown: %w", ErrClosed))
	}
	return errors.Join(errs...)
}

// pendingAll is the number of connections handed to a Loop and not yet
// added there.
func (g *Group) pendingAll() int64 {
	var n int64
	for i := range g.pending {
		n += g.pending[i].Load()
	}
	return n
}

// keep records a new Listener, so that Shutdown closes it; once Shutdown
// has begun, it closes it instead.
func (g *Group) keep(ln *Listener) (*Listener, error) {
	g.lnMu.Lock()
	if g.shut {
		g.lnMu.Unlock()
		return nil, errors.Join(fmt.Errorf("netloop: listen on a Group shutting down: %w", ErrClosed), ln.closeParts())
	}
	g.listeners[ln] = struct{}{}
	g.lnMu.Unlock()
	return ln, nil
}

// forget drops a Listener closed on its own.
func (g *Group) forget(ln *Listener) {
	g.lnMu.Lock()
	delete(g.listeners, ln)
	g.lnMu.Unlock()
}

// closeListeners closes every Listener, and makes new ones fail.
func (g *Group) closeListeners() error {
	g.lnMu.Lock()
	g.shut = true
	lns := make([]*Listener, 0, len(g.listeners))
	for ln := range g.listeners {
		lns = append(lns, ln)
	}
	clear(g.listeners)
	g.lnMu.Unlock()
	var errs []error
	for _, ln := range lns {
		if !ln.closed.Swap(true) {
			errs = append(errs, ln.closeParts())
		}
	}
	return errors.Join(errs...)
}
