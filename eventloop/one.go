package eventloop

import (
	"time"

	"github.com/unipoll/unipoll/poll"
)

// One worker: the goroutine in Run (or RunOnce) owns the run queue and
// does everything, in iterations: the calls that asked for Again in the
// last one and the Triggers join the run queue, the Poll is asked, the
// events of sources registered on it directly go to Run's Handler, the
// Loop's own are dispatched within the budgets through the engine's
// steps (engine.go), removals left to the Loop are finished, and Tick
// runs. No lock is taken on the way from an event to a call.

// runOne is Run with one worker: the goroutine that called Run owns the
// run queue and does everything.
func (l *Loop) runOne(rs *runState, h Handler, w *worker) error {
	tick, _ := h.(Ticker)
	// Entries that asked for Again in the last iteration wait in the run
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
// Again join the run queue, the Poll is asked (without waiting if anything
// is queued) and the Triggers taken, the events of sources registered on it
// directly go to h, the Loop's own are dispatched within the budgets,
// removals left to the Loop are finished, and Tick runs.
func (l *Loop) iterate(w *worker, h Handler, tick Ticker, timeout time.Duration) error {
	w.flushNext()
	n, err := l.pollStep(w, timeout)
	if err != nil {
		return err
	}
	ours := 0
	for i := range n {
		ev := w.events.At(i)
		if IsLoopToken(ev.Token) {
			ours++
		} else if h != nil {
			h.Ready(l, ev)
		}
	}
	if ours > 0 {
		l.dispatchBatch(w, ours)
	} else {
		// Entries that asked for Again or were triggered are queued
		// without an event of their own.
		l.dispatch(w, l.cfg.MaxDispatchPerIteration, l.cfg.MaxEventsPerIteration)
	}
	if l.reapN.Load() != 0 {
		l.drainReaps()
	}
	if tick != nil {
		tick.Tick(l)
	}
	return nil
}

// dispatchBatch dispatches the ours events of the Loop's own tokens in
// w.events. When nothing is queued, every source has the one priority and
// the batch fits the budgets, the run queue would hand the entries back in
// the order they arrive, so they are claimed straight from the batch: the
// common case costs no queueing. Otherwise they are routed into the run
// queue, which orders them.
func (l *Loop) dispatchBatch(w *worker, ours int) {
	if l.rq.n > 0 || !l.lvls.single() || ours > l.cfg.MaxEventsPerIteration {
		l.routeBatch(w, w.events.Len())
		l.dispatch(w, l.cfg.MaxDispatchPerIteration, l.cfg.MaxEventsPerIteration)
		return
	}
	budget := l.cfg.MaxDispatchPerIteration
	evBudget := l.cfg.MaxEventsPerIteration
	n := w.events.Len()
	hints := n >= aheadBatch && l.tab.many.Load()
	for i := range n {
		ev := w.events.At(i)
		if !IsLoopToken(ev.Token) {
			continue
		}
		if hints {
			l.ahead(w, i, n)
		}
		if budget <= 0 {
			l.route(ev) // posted functions or timers used it up: the rest waits
			continue
		}
		// The engine's claim, for an event rather than a queued item:
		// written out here, in the one loop that needs it, where a call
		// cost the dispatch benchmark a few percent.
		e, gen := l.tab.lookup(ev.Token)
		if e == nil {
			l.stats.stale.Add(1)
			continue
		}
		s := e.state.Load()
		if !claimable(s, gen) {
			if stateGen(s) == gen && s&fLive != 0 {
				l.stats.dropped.Add(1) // disarmed
			} else {
				l.stats.stale.Add(1)
			}
			continue
		}
		if !e.state.CompareAndSwap(s, s|fRunning) {
			l.stats.dropped.Add(1) // disarmed or removed just now
			continue
		}
		used, more, event := l.call(w, e, gen, ev.Ready, budget)
		budget -= used
		if event {
			evBudget--
		}
		l.releaseOne(w, e, gen, ev.Ready, more)
	}
	// What the budget left behind waits for the next iteration; the rest
	// of this iteration's budget is not renewed (Config.MaxDispatchPerIteration).
	l.dispatch(w, budget, evBudget)
}

// dispatch calls the handlers of queued entries, highest priority first,
// within what is left of the iteration's budgets.
func (l *Loop) dispatch(w *worker, budget, evBudget int) {
	for l.rq.n > 0 && budget > 0 && evBudget > 0 {
		e, gen, r, ok := l.claim()
		if !ok {
			continue
		}
		used, more, event := l.call(w, e, gen, r, budget)
		budget -= used
		if event {
			evBudget--
		}
		l.releaseOne(w, e, gen, r, more)
	}
}

// releaseOne is the engine's release step for one worker, without the
// general release's branches for several (BenchmarkDispatch/loop: 34.5 ns
// a call through release, 33.5 through this, 31.8 before the engines
// were merged). With one worker nothing else claims an entry, so a claim
// never finds it running and e.again stays false.
func (l *Loop) releaseOne(w *worker, e *entry, gen uint32, r poll.Ready, more bool) {
	if e.release() {
		l.finish(e, gen)
		return
	}
	if more {
		w.requeue(e, gen, r)
	}
}
