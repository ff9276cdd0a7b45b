package sys

import (
	"sync"
	"sync/atomic"
)

// wakeGate coalesces wake-ups.
//
// Invariants:
//   - pending is 1 from the moment a Wake decides to write the kernel object
//     until the selector has observed the wake-up in Select and reset it.
//   - Only the caller that moves pending from 0 to 1 writes, so any number of
//     Wake calls between two Selects cost one write.
//   - Select resets pending only after it has drained the kernel object
//     (wakers that need draining). A Wake that lands between the drain and
//     the reset finds pending set and does not write; that is safe because
//     the selecting goroutine is awake at that moment and looks at whatever
//     the waker announces (the readiness queue, the wheel, the closed flag)
//     after Select returns. Resetting before the drain would be wrong: the
//     drain could swallow a write made after the reset while pending stays
//     set, and every later Wake would be coalesced into that lost write.
type wakeGate struct {
	pending atomic.Uint32
	writes  atomic.Uint64
}

// begin reports whether the caller must perform the kernel write.
func (g *wakeGate) begin() bool {
	if g.pending.Load() != 0 || !g.pending.CompareAndSwap(0, 1) {
		return false
	}
	g.writes.Add(1)
	return true
}

// reset is called by Select after it saw the waker fire (and drained it),
// and by the writer whose write failed, so that a later Wake retries.
func (g *wakeGate) reset() { g.pending.Store(0) }

// write performs the kernel write that begin granted, holding closeMu for
// reading (the selector's Close holds it for writing while it closes the
// waker), and not at all once closed is set. A failed write resets the
// gate, so that a later Wake retries.
func (g *wakeGate) write(closeMu *sync.RWMutex, closed *atomic.Bool, write func() error) error {
	closeMu.RLock()
	defer closeMu.RUnlock()
	if closed.Load() {
		return nil
	}
	if err := write(); err != nil {
		g.reset()
		return err
	}
	return nil
}
