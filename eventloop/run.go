package eventloop

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/unipoll/unipoll/poll"
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
	if f, ok := h.(HandlerFunc); ok && f == nil {
		return fmt.Errorf("%w: eventloop: Run with a nil HandlerFunc", ErrInvalidArgument)
	}
	l.mu.Lock()
	switch {
	case l.closed.Load():
		l.mu.Unlock()
		return ErrClosed
	case l.active:
		l.mu.Unlock()
		return ErrRunning
	}
	l.active = true
	l.mu.Unlock()

	rs := &runState{}
	ws := make([]*worker, l.cfg.Workers)
	for i := range ws {
		ws[i] = newWorker(l, i)
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
		if rerr := l.release(); err == nil {
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

// runOne is Run with one worker: the goroutine that called Run owns the
// run queue and does everything.
func (l *Loop) runOne(rs *runState, h Handler, w *worker) error {
	tick, _ := h.(Ticker)
	// Entries that asked for Rearm in the last iteration wait in the run
	// queue for the next Run.
	defer w.flushNext()
	for !l.stopping(rs) {
		if err := l.iterate(w, h, tick, -1); err != nil {
			return err
		}
	}
	return nil
}

// iterate is one iteration with one worker: the entries that asked for
// Rearm and those triggered join the run queue, the Poll is asked (without
// waiting if anything is queued), its events are routed, the queue is
// dispatched within the budgets, removals left to the Loop are finished,
// and Tick runs.
func (l *Loop) iterate(w *worker, h Handler, tick Ticker, timeout time.Duration) error {
	w.flushNext()
	if l.kickN.Load() != 0 {
		l.takeKicks()
	}
	if l.rq.n > 0 {
		timeout = 0
	}
	n, err := l.p.Poll(w.events, timeout)
	if err != nil {
		return fmt.Errorf("eventloop: poll: %w", err)
	}
	l.stats.iterations.Add(1)
	for i := range n {
		ev := w.events.At(i)
		if !IsLoopToken(ev.Token) {
			if h != nil {
				h.Ready(l, ev)
			}
			continue
		}
		l.route(ev)
	}
	l.dispatch(w)
	if l.reapN.Load() != 0 {
		l.drainReaps()
	}
	if tick != nil {
		tick.Tick(l)
	}
	return nil
}

// RunOnce makes one iteration of the Loop on the caller's goroutine: one
// Poll call that waits at most timeout (negative: until something is
// ready; zero: not at all; it does not wait if handler calls are already
// queued), the calls for what it returned and what was queued, within the
// budgets, and h's Tick if h is a Ticker. It is the AEN notes' poll and
// poll_nowait, for a program that drives the Loop from a loop of its own.
// Config.Workers does not apply: the caller's goroutine does everything.
//
// It returns ErrRunning while a Run or another RunOnce is in progress, and
// nil at once after Shutdown.
func (l *Loop) RunOnce(timeout time.Duration, h Handler) error {
	if l == nil || l.p == nil {
		return errZeroLoop
	}
	if f, ok := h.(HandlerFunc); ok && f == nil {
		return fmt.Errorf("%w: eventloop: RunOnce with a nil HandlerFunc", ErrInvalidArgument)
	}
	l.mu.Lock()
	switch {
	case l.closed.Load():
		l.mu.Unlock()
		return ErrClosed
	case l.active:
		l.mu.Unlock()
		return ErrRunning
	case l.stop.Load():
		l.mu.Unlock()
		return nil
	}
	l.active = true
	if l.once == nil {
		l.once = newWorker(l, 0)
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

// route queues the entry an event names, if it is of the token's
// generation and live (invariant 1). Run-queue owner only.
func (l *Loop) route(ev poll.Event) {
	e, gen := l.tab.lookup(ev.Token)
	if e == nil {
		l.stats.stale.Add(1)
		return
	}
	if _, ok := e.liveAt(gen); !ok {
		l.stats.stale.Add(1)
		return
	}
	l.rq.enqueue(e, gen, ev.Ready)
}

// dispatch calls the handlers of queued entries, highest priority first,
// within the iteration's budgets. Run-queue owner only (one worker).
func (l *Loop) dispatch(w *worker) {
	budget := l.cfg.MaxDispatchPerIteration
	evBudget := l.cfg.MaxEventsPerIteration
	for l.rq.n > 0 && budget > 0 && evBudget > 0 {
		it := l.rq.pop()
		e := it.e
		s := e.state.Load()
		if stateGen(s) != it.gen {
			l.stats.stale.Add(1)
			continue // an item of an earlier incarnation (invariant 1)
		}
		e.queued = false
		r := e.ready
		e.ready = 0
		if !claimable(s, it.gen) || !e.state.CompareAndSwap(s, s|fRunning) {
			l.stats.dropped.Add(1) // removed or disarmed since it was queued
			continue
		}
		used, more := l.call(w, e, it.gen, r, budget)
		budget -= used
		if e.kind == kindUser {
			evBudget--
		}
		if more {
			w.requeue(e, it.gen, r)
		}
		if e.release() {
			l.finish(e, it.gen)
		}
	}
}

// call runs one claimed entry: a user handler and its action, or one of
// the Loop's own sources. It returns how much of budget it used and
// whether the entry asks to be called again next iteration without a new
// event.
func (l *Loop) call(w *worker, e *entry, gen uint32, r poll.Ready, budget int) (used int, again bool) {
	switch e.kind {
	case kindPost:
		n, more := l.runPosted(budget)
		return max(n, 1), more
	case kindTimer:
		n, more := l.runTimers(budget)
		return max(n, 1), more
	case kindWake:
		return 1, false
	case kindConn:
		w.calls.inc()
		return 1, l.apply(e, gen, (*Conn)(e.h.(*connSource)).ready(w, r))
	}
	tok := makeToken(e.idx, gen)
	w.calls.inc()
	act := e.h.Ready(l, poll.Event{Token: tok, Ready: r})
	return 1, l.apply(e, gen, act)
}

// apply carries out a handler's Action; it reports whether the entry is to
// be queued again without asking the Poll (Rearm of an armed Edge or Level
// source). If the Reregister that Rearm or Disarm needs fails (the
// handler closed its source, say), the source is removed, so that its
// Removed runs and nothing is left half registered.
func (l *Loop) apply(e *entry, gen uint32, act Action) (again bool) {
	var err error
	switch act {
	case Rearm:
		if !e.opts.IsOneshot() && e.state.Load()&fDisarmed == 0 {
			return true
		}
		e.mu.Lock()
		err = l.rearmLocked(e, gen)
		e.mu.Unlock()
	case Disarm:
		e.mu.Lock()
		// A Oneshot source that was just reported is disarmed in the Poll
		// already; anything else is deregistered.
		err = l.disarmLocked(e, gen, !e.opts.IsOneshot())
		e.mu.Unlock()
	case Remove:
		_ = l.remove(e, gen)
		return false
	}
	if err != nil && !isUnknown(err) {
		l.stats.actionErrors.Add(1)
		_ = l.remove(e, gen)
	}
	return false
}
