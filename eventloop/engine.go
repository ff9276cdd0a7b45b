package eventloop

import (
	"fmt"
	"time"

	"github.com/unipoll/unipoll/poll"
)

// The dispatch engine: the steps that take a source from an event to a
// call of its handler and back, the same for one worker and for several.
//
//   - poll: the Poll fills a worker's batch, and the Triggers that came
//     meanwhile are taken.
//   - route: an event (or a Trigger) queues its entry in the run queue,
//     if the event's generation is the entry's (invariant 1); for an
//     entry that is running it sets entry.again instead (W3).
//   - claim: a run-queue item, or with one worker an event of the batch
//     (dispatchBatch's shortcut), becomes a call: the CAS of invariant 2.
//   - call: the handler's Ready and its Action, or one of the Loop's own
//     sources (own.go), which runs within the iteration's budget.
//   - release: fRunning is cleared; a removed entry is finished, one that
//     asked for Again or heard an event meanwhile is queued again.
//
// Who runs them: with one worker, the goroutine in Run, which owns the
// run queue and takes no lock (one.go); with several, whoever holds
// Loop.mu around route, claim and release, and none during the call
// (workers.go). worker.shared tells the two apart where they differ:
// where a call that asks for Again waits (the next iteration, or the run
// queue at once, for another worker to take) and whether finishing a
// removed entry must first let go of Loop.mu.
//
// The two keep their own scheduling loops (who polls, when Tick runs, how
// far the budget goes): folding the one-worker loop into the leader and
// followers would cost it a lock per call, or change when Run ticks and
// stops. For the same reason one.go writes out the claim of an event and
// the release (releaseOne): through the general steps the dispatch
// benchmark's call cost 8% more.

// pollStep asks the Poll for w's batch, without waiting if the run queue
// holds anything, counts the iteration, and queues the Triggers that came.
// A Trigger that comes later wakes the Poll (trigger.go), so none waits
// for an event. With several workers Loop.mu is held on entry and on
// return, and let go during the Poll.
func (l *Loop) pollStep(w *worker, timeout time.Duration) (n int, err error) {
	if l.rq.n > 0 {
		timeout = 0
	}
	if w.shared {
		l.mu.Unlock()
	}
	n, err = l.p.Poll(w.events, timeout)
	if w.shared {
		l.mu.Lock()
	}
	if err != nil {
		return 0, fmt.Errorf("eventloop: poll: %w", err)
	}
	l.stats.iterations.Add(1)
	if l.triggerN.Load() != 0 {
		l.takeTriggers()
	}
	return n, nil
}

// routeBatch routes the first n events of w's batch that belong to the
// Loop's sources, and reports whether the batch also has events for Run's
// Handler (sources registered on Loop.Poll directly).
func (l *Loop) routeBatch(w *worker, n int) (raw bool) {
	for i := range n {
		ev := w.events.At(i)
		if !IsLoopToken(ev.Token) {
			raw = true
			continue
		}
		l.route(ev)
	}
	return raw
}

// route queues the entry an event names, if it is of the token's
// generation and live (invariant 1). Run-queue owner only.
func (l *Loop) route(ev poll.Event) {
	e, gen := l.tab.lookup(ev.Token)
	if e == nil {
		l.stats.stale.Add(1)
		return
	}
	s, ok := e.liveAt(gen)
	if !ok {
		l.stats.stale.Add(1)
		return
	}
	if s&fRunning != 0 { // several workers: W3
		e.ready |= ev.Ready
		e.again = true
		return
	}
	l.rq.enqueue(e, gen, ev.Ready)
}

// claim pops the run queue's first item and claims its entry. It reports
// false if the item was stale, the entry is running (then entry.again
// keeps the call, W3), removed or disarmed. Run-queue owner only.
func (l *Loop) claim() (e *entry, gen uint32, r poll.Ready, ok bool) {
	it := l.rq.pop()
	e, gen = it.e, it.gen
	s := e.state.Load()
	if stateGen(s) != gen {
		l.stats.stale.Add(1)
		return nil, 0, 0, false // an item of an earlier incarnation (invariant 1)
	}
	e.queued = false
	if s&fRunning != 0 {
		e.again = true
		return nil, 0, 0, false
	}
	r = e.ready
	e.ready = 0
	if !claimable(s, gen) || !e.state.CompareAndSwap(s, s|fRunning) {
		l.stats.dropped.Add(1) // removed or disarmed since it was queued
		return nil, 0, 0, false
	}
	return e, gen, r, true
}

// call runs one claimed entry: its handler and the Action it returns, or
// one of the Loop's own sources. It returns how much of budget it used,
// whether the entry asks to be called again without a new event, and
// whether the call counts against MaxEventsPerIteration (the Loop's own
// sources do not: they count their work against the dispatch budget).
func (l *Loop) call(w *worker, e *entry, gen uint32, r poll.Ready, budget int) (used int, again, event bool) {
	if e.own != nil {
		n, more := e.own(l, budget)
		return max(n, 1), more, false
	}
	w.calls.inc()
	e.caller = w // for ReadBuffer, during the call
	act := e.h.Ready(l, poll.Event{Token: makeToken(e.idx, gen), Ready: r})
	e.caller = nil
	return 1, l.apply(e, gen, act), true
}

// apply carries out a handler's Action; it reports whether the entry is to
// be queued again without asking the Poll (Again of an armed Edge or Level
// source). If the Reregister that Again or Disarm needs fails (the
// handler closed its source, say), the source is removed, so that its
// Removed runs and nothing is left half registered.
func (l *Loop) apply(e *entry, gen uint32, act Action) (again bool) {
	var err error
	switch act {
	case Again:
		if !e.oneshot && e.state.Load()&fDisarmed == 0 {
			return true
		}
		e.mu.Lock()
		err = l.rearmLocked(e, gen)
		e.mu.Unlock()
	case Disarm:
		e.mu.Lock()
		// A Oneshot source that was just reported is disarmed in the Poll
		// already; anything else is deregistered.
		err = l.disarmLocked(e, gen, !e.oneshot)
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

// release ends a call (invariants 2 and 3, W3): a removed entry is
// finished; one that asked for Again (more) is queued again with the
// readiness of its call, one that heard an event or a Trigger while it ran
// (again) without. With one worker a call that asked for Again waits for
// the next iteration (worker.requeue), so that it does not run again
// before the Poll has been asked what else is ready; with several it goes
// to the back of the run queue at once, where another worker may take it.
// It reports whether it queued the entry. With several workers the caller
// holds Loop.mu, which is let go while Removed runs.
func (l *Loop) release(w *worker, e *entry, gen uint32, r poll.Ready, more bool) (queued bool) {
	again := e.again
	e.again = false
	if e.release() {
		if w.shared {
			l.mu.Unlock()
			defer l.mu.Lock()
		}
		l.finish(e, gen)
		return false
	}
	switch {
	case more && !w.shared:
		w.requeue(e, gen, r)
	case more:
		l.rq.enqueue(e, gen, r)
	case again:
		l.rq.enqueue(e, gen, 0)
	}
	return more || again
}
