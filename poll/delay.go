package poll

import "time"

// Delayed readiness: DelayReadiness puts one entry per Registration in the
// Poll's timing wheel (wheel.go), under the delay owner. The entry's key is
// the index of the Registration in wheel.nodes, so that the wheel holds a
// Go pointer to the node only while a delay is pending. The node's
// delayID, delayed and the wheel entry change together under the wheel's
// mutex; hasDelay mirrors "delayID names a pending entry" for
// UnsetReadiness's fast path, which must not take the mutex.

// DelayReadiness makes r ready after d, as SetReadiness would: never
// earlier, and at most one wheel tick later (Config.WheelTick). A
// Registration has one pending delay: a new call replaces the old one, and
// UnsetReadiness cancels the bits it clears. The Registration must be
// registered, since the delay lives in its Poll's timing wheel.
func (s *SetReadiness) DelayReadiness(r Ready, d time.Duration) error {
	if r&^allReady != 0 || d < 0 {
		return wrapf(ErrInvalidArgument, "DelayReadiness(%s, %v)", r, d)
	}
	n, err := s.node()
	if err != nil {
		return err
	}
	if n.state.Load()&stDropped != 0 {
		return ErrClosed
	}
	p := n.poll.Load()
	if p == nil {
		return wrapf(ErrNotRegistered, "DelayReadiness needs a registered Registration")
	}
	if d == 0 {
		return n.set(r)
	}
	return p.wheel.delay(n, r, d)
}

// delay schedules n's delayed readiness r after d, replacing any pending
// one.
func (w *wheel) delay(n *regNode, r Ready, d time.Duration) error {
	deadline, now := w.deadlineAfter(d)
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrClosed
	}
	w.cancelDelayLocked(n)
	key, slot := w.nodes.Alloc()
	*slot = n
	id, wake := w.schedule(ownerDelays, uint64(key), deadline, now)
	n.delayID, n.delayed = id, r
	n.hasDelay.Store(true)
	w.mu.Unlock()
	if wake {
		w.wake()
	}
	return nil
}

// cancelDelay drops n's pending delay, if any (Registration.Close).
func (w *wheel) cancelDelay(n *regNode) {
	w.mu.Lock()
	w.cancelDelayLocked(n)
	w.mu.Unlock()
}

// unsetDelayed clears r from n's pending delayed readiness, and drops the
// delay when nothing is left of it.
func (w *wheel) unsetDelayed(n *regNode, r Ready) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, _, ok := w.lookup(n.delayID); !ok {
		return
	}
	if n.delayed &^= r; n.delayed == 0 {
		w.cancelDelayLocked(n)
	}
}

func (w *wheel) cancelDelayLocked(n *regNode) {
	if idx, e, ok := w.lookup(n.delayID); ok {
		w.unlink(idx, e)
		w.nodes.Free(uint32(e.key))
		w.freeEntry(idx)
		w.cancelled++
	}
	n.delayID, n.delayed = wheelID{}, 0
	n.hasDelay.Store(false)
}

// fireDelay takes a delay that came due out of the wheel; expire sets the
// readiness once the mutex is released.
func (w *wheel) fireDelay(idx int32, e *wheelEntry) {
	n := *w.nodes.Get(uint32(e.key))
	w.dueDelays = append(w.dueDelays, dueDelay{n, n.delayed})
	n.delayID, n.delayed = wheelID{}, 0
	n.hasDelay.Store(false)
	w.nodes.Free(uint32(e.key))
	w.freeEntry(idx)
}
