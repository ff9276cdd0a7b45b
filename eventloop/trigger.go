package eventloop

import (
	"github.com/unipoll/unipoll/poll"
)

// Trigger queues a call of the handler of the source of token t, with no
// readiness (ev.Ready is empty unless an event for it arrives meanwhile),
// from any goroutine: for work a handler does that no event announces
// (output queued from elsewhere, a state change). The call comes in the
// Loop's next iteration, in priority order, and is merged with an event
// or another Trigger for the same source that comes before it. A disarmed
// source is not called (its Trigger is dropped, as its events are).
func (l *Loop) Trigger(t poll.Token) error {
	e, gen, err := l.entryOf(t)
	if err != nil {
		return err
	}
	if _, ok := e.liveAt(gen); !ok {
		return unknownToken(t)
	}
	l.trigger(e, gen)
	return nil
}

// trigger hands an item to the run-queue owner through the triggers
// list, and wakes the Loop to take it.
func (l *Loop) trigger(e *entry, gen uint32) {
	l.triggerMu.Lock()
	l.triggers = append(l.triggers, item{e, gen})
	l.triggerMu.Unlock()
	l.triggerN.Add(1)
	l.wakeUp()
}

// takeTriggers moves the triggered entries into the run queue. Run-queue
// owner only; with several workers, Loop.mu is held.
func (l *Loop) takeTriggers() {
	l.triggerMu.Lock()
	triggers := l.triggers
	l.triggers = l.triggersSpare[:0]
	l.triggerMu.Unlock()
	l.triggerN.Add(-int32(len(triggers)))
	for i, it := range triggers {
		triggers[i] = item{}
		s, ok := it.e.liveAt(it.gen)
		switch {
		case !ok:
			l.stats.stale.Add(1)
		case s&fRunning != 0:
			it.e.again = true // several workers: W3
		default:
			l.rq.enqueue(it.e, it.gen, 0)
		}
	}
	l.triggersSpare = triggers[:0]
}
