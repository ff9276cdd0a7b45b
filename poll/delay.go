package poll

import "time"

// Delayed readiness: DelayReadiness puts one entry per Registration in the
// Poll's timing wheel (wheel.go), under owner 0. The entry's key is the
// index of the Registration in pollWheel.nodes, so that the wheel holds a
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
func (w *pollWheel) delay(n *regNode, r Ready, d time.Duration) error {
	deadline, at := w.DeadlineAfter(d)
	w.Lock()
	if w.ClosedLocked() {
		w.Unlock()
		return ErrClosed
	}
	w.cancelDelayLocked(n)
	key, slot := w.nodes.Alloc()
	*slot = n
	id, wake, err := w.AddLocked(uint64(key), deadline, at)
	if err != nil {
		w.nodes.Free(key)
		w.Unlock()
		return err
	}
	n.delayID, n.delayed = id, r
	n.hasDelay.Store(true)
	w.Unlock()
	if wake {
		w.Wake()
	}
	return nil
}

// cancelDelay drops n's pending delay, if any (Registration.Close).
func (w *pollWheel) cancelDelay(n *regNode) {
	w.Lock()
	w.cancelDelayLocked(n)
	w.Unlock()
}

// unsetDelayed clears r from n's pending delayed readiness, and drops the
// delay when nothing is left of it.
func (w *pollWheel) unsetDelayed(n *regNode, r Ready) {
	w.Lock()
	defer w.Unlock()
	if !w.PendingLocked(n.delayID) {
		return
	}
	if n.delayed &^= r; n.delayed == 0 {
		w.cancelDelayLocked(n)
	}
}

func (w *pollWheel) cancelDelayLocked(n *regNode) {
	if key, ok := w.CancelLocked(n.delayID); ok {
		w.nodes.Free(uint32(key))
	}
	n.delayID, n.delayed = wheelID{}, 0
	n.hasDelay.Store(false)
}

// fireDelay takes a delay that came due out of the wheel (the Wheel's fire
// callback, under its mutex); expire sets the readiness once the mutex is
// released.
func (w *pollWheel) fireDelay(key uint64) {
	n := *w.nodes.Get(uint32(key))
	w.dueDelays = append(w.dueDelays, dueDelay{n, n.delayed})
	n.delayID, n.delayed = wheelID{}, 0
	n.hasDelay.Store(false)
	w.nodes.Free(uint32(key))
}
