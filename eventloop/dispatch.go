package eventloop

import "github.com/unipoll/unipoll/poll"

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

// dispatchBatch dispatches the ours events of the Loop's own tokens in
// w.events. When nothing is queued, every source has the one priority and
// the batch fits the budgets, the run queue would hand the entries back in
// the order they arrive, so they are called straight from the batch: the
// common case costs no queueing. Otherwise they are routed into the run
// queue, which orders them.
func (l *Loop) dispatchBatch(w *worker, ours int) {
	if l.rq.n > 0 || !l.lvls.single() || ours > l.cfg.MaxEventsPerIteration {
		for ev := range w.events.All() {
			if IsLoopToken(ev.Token) {
				l.route(ev)
			}
		}
		l.dispatch(w, l.cfg.MaxDispatchPerIteration, l.cfg.MaxEventsPerIteration)
		return
	}
	budget := l.cfg.MaxDispatchPerIteration
	evBudget := l.cfg.MaxEventsPerIteration
	for i := range w.events.Len() {
		ev := w.events.At(i)
		if !IsLoopToken(ev.Token) {
			continue
		}
		if budget <= 0 {
			l.route(ev) // posted functions or timers used it up: the rest waits
			continue
		}
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
		used, more := l.call(w, e, gen, ev.Ready, budget)
		budget -= used
		if e.kind == kindUser {
			evBudget--
		}
		if more {
			w.requeue(e, gen, ev.Ready)
		}
		if e.release() {
			l.finish(e, gen)
		}
	}
	// What the budget left behind waits for the next iteration; the rest
	// of this iteration's budget is not renewed (Config.MaxDispatchPerIteration).
	l.dispatch(w, budget, evBudget)
}

// dispatch calls the handlers of queued entries, highest priority first,
// within what is left of the iteration's budgets. Run-queue owner only
// (one worker).
func (l *Loop) dispatch(w *worker, budget, evBudget int) {
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
	if e.kind == kindUser {
		w.calls.inc()
		act := e.h.Ready(l, poll.Event{Token: makeToken(e.idx, gen), Ready: r})
		return 1, l.apply(e, gen, act)
	}
	switch e.kind {
	case kindPost:
		n, more := l.runPosted(budget)
		return max(n, 1), more
	case kindTimer:
		n, more := l.runTimers(budget)
		return max(n, 1), more
	case kindConn:
		w.calls.inc()
		return 1, l.apply(e, gen, (*Conn)(e.h.(*connSource)).ready(w, r))
	}
	return 1, false
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
