package eventloop

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// Run serves the Loop: it polls, routes each event to its source's
// handler (see Add) or, for sources registered on Poll directly, to h,
// calls the handlers in priority order, runs posted functions, and, if h
// is a Ticker, calls h.Tick at the end of each iteration. h may be nil.
//
// With Config.Workers above 1, Run starts Workers-1 goroutines besides
// the caller's and returns when all of them have stopped; h.Ready and
// h.Tick are then serialised (never run concurrently).
//
// Run returns nil after Shutdown or Close, and ctx's error when ctx ends;
// either way the handlers in progress have returned. It returns at once
// if ctx has already ended or the Loop has been shut down. Another Run
// may follow one that ctx ended; a Run while one is in progress returns
// ErrRunning. An error of the Poll itself ends Run with that error.
func (l *Loop) Run(ctx context.Context, h Handler) error {
	if l == nil || l.p == nil {
		return errZeroLoop
	}
	if ctx == nil {
		return fmt.Errorf("%w: eventloop: Run needs a context", ErrInvalidArgument)
	}
	if err := nilHandler("Run", h); err != nil {
		return err
	}
	l.mu.Lock()
	if err := l.claimableLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	l.active = true
	l.mu.Unlock()

	rs := &runState{}
	ws := make([]*worker, l.cfg.Workers)
	for i := range ws {
		ws[i] = newWorker(l, i, l.cfg.Workers > 1)
	}
	l.mu.Lock()
	l.lastWorkers = ws
	l.mu.Unlock()
	stopWatch := context.AfterFunc(ctx, func() { rs.ctxDone.Store(true); l.interrupt() })
	var err error
	if l.cfg.Workers > 1 {
		err = l.runWorkers(rs, h, ws)
	} else {
		err = l.runOne(rs, h, ws[0])
	}
	stopWatch()
	if l.endRun(ws) {
		if rerr := l.releaseAll(); err == nil {
			err = rerr
		}
	}
	if err == nil && rs.ctxDone.Load() && !l.stop.Load() {
		err = ctx.Err()
	}
	return err
}

// endRun ends a Run or RunOnce: removals left to the Loop are finished
// while it still counts as active (so no other Run starts and owns the run
// queue meanwhile), then it is marked inactive. It reports whether Close
// was called meanwhile and the release is the caller's to do.
func (l *Loop) endRun(ws []*worker) (release bool) {
	l.drainReaps()
	l.mu.Lock()
	for len(l.reaps) > 0 { // a Remove that raced the drain
		l.mu.Unlock()
		l.drainReaps()
		l.mu.Lock()
	}
	l.active = false
	for _, w := range ws {
		c := w.calls.load()
		l.stats.callsDone.Add(c - w.accounted)
		w.accounted = c
	}
	release = l.closing
	l.mu.Unlock()
	return release
}

// interrupt wakes a Run for its context's end: Run notices rs.ctxDone.
// It is Shutdown without the sticky flag.
func (l *Loop) interrupt() {
	l.wakeUp()
	l.mu.Lock()
	if l.multi != nil {
		l.multi.wakeAllLocked()
	}
	l.mu.Unlock()
}

// runState is one Run's: its context's end, as a flag the loop reads each
// iteration.
type runState struct {
	ctxDone atomic.Bool
}

func (l *Loop) stopping(rs *runState) bool { return l.stop.Load() || rs.ctxDone.Load() }

// RunOnce makes one iteration of the Loop on the caller's goroutine: one
// Poll call that waits at most timeout (negative: until something is
// ready; zero: not at all; it does not wait if handler calls are already
// queued), the calls for what it returned and what was queued, within the
// budgets, and h's Tick if h is a Ticker. It is for a program that
// drives the Loop from a loop of its own (with a zero timeout, a look that
// never blocks).
// Config.Workers does not apply: the caller's goroutine does everything.
//
// It returns ErrRunning while a Run or another RunOnce is in progress, and
// nil at once after Shutdown.
func (l *Loop) RunOnce(timeout time.Duration, h Handler) error {
	if l == nil || l.p == nil {
		return errZeroLoop
	}
	if err := nilHandler("RunOnce", h); err != nil {
		return err
	}
	l.mu.Lock()
	if err := l.claimableLocked(); err != nil || l.stop.Load() {
		l.mu.Unlock()
		return err // nil after Shutdown
	}
	l.active = true
	if l.once == nil {
		l.once = newWorker(l, 0, false)
	}
	w := l.once
	l.lastWorkers = []*worker{w}
	l.mu.Unlock()
	tick, _ := h.(Ticker)
	err := l.iterate(w, h, tick, timeout)
	w.flushNext()
	l.endRun([]*worker{w})
	return err
}

// claimableLocked, with l.mu held, says whether a Run or RunOnce may claim
// the Loop: not a closed one, nor one another run holds.
func (l *Loop) claimableLocked() error {
	switch {
	case l.closed.Load():
		return ErrClosed
	case l.active:
		return ErrRunning
	}
	return nil
}

// nilHandler refuses a nil HandlerFunc given to call.
func nilHandler(call string, h Handler) error {
	if f, ok := h.(HandlerFunc); ok && f == nil {
		return fmt.Errorf("%w: eventloop: %s with a nil HandlerFunc", ErrInvalidArgument, call)
	}
	return nil
}
