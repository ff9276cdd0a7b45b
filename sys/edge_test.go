//go:build unix

package sys

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Edge means the same on every backend: a lasting condition is reported
// once, not on every Select, and a caller that re-arms after EAGAIN loses
// nothing. poll(2) has no edge mode, so it emulates one (Traits.NativeEdge).

// An always-writable socket registered Edge|Writable (register read and
// write interest once, the usual pattern) is reported once; a blocking
// Select then blocks instead of returning at once, over and over.
func TestSelectorEdgeAlwaysWritable(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := newSocketpair(t)
		require.NoError(t, s.Add(p.a, 1, Readable|Writable, Edge))
		require.NotZero(t, waitEvent(t, s, 1).Ready&Writable)

		waits := requireQuiet(t, s, 300*time.Millisecond, "an edge reported twice while nothing changed")
		require.LessOrEqual(t, s.Counters().Waits-waits, uint64(2), "Select spun inside one call")

		// New data is a new edge for Readable; Writable is still quiet.
		writeByte(t, p.b)
		ev := waitEvent(t, s, 1)
		require.NotZero(t, ev.Ready&Readable)
		requireNoEvent(t, s, 1)
	})
}

// Under emulation a reported condition stays out of the kernel's view
// until Drained: data that arrives before the caller re-arms is reported
// once it does (at once, if it is still there). Natively it is a new edge
// anyway, and Drained costs nothing.
func TestSelectorEdgeDrained(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := newSocketpair(t)
		require.NoError(t, s.Add(p.a, 1, Readable, Edge))
		writeByte(t, p.b)
		waitEvent(t, s, 1)

		// A caller still in its read pass has not re-armed.
		writeByte(t, p.b)
		if s.Traits().NativeEdge {
			waitEvent(t, s, 1)
		} else {
			requireNoEvent(t, s, 1)
		}
		// Re-arming with data still unread: reported (poll) or not new
		// (native); never lost either way once the caller drains.
		require.NoError(t, s.Drained(p.a, Readable))
		if !s.Traits().NativeEdge {
			waitEvent(t, s, 1)
		}
		drainFd(t, p.a)
		require.NoError(t, s.Drained(p.a, Readable))
		requireNoEvent(t, s, 1)
		writeByte(t, p.b)
		waitEvent(t, s, 1)

		// Drained for what is not quiet, or for a level registration, changes
		// nothing.
		require.NoError(t, s.Drained(p.a, Writable))
		require.NoError(t, s.Modify(p.a, 2, Readable, Level))
		require.NoError(t, s.Drained(p.a, Readable))
		waitEvent(t, s, 2)
		waitEvent(t, s, 2)
	})
}

// A descriptor that hangs up is reported once, and then costs an idle
// Select almost nothing: a few looks in its first second (the rest
// schedule backs off), not one every few milliseconds.
func TestSelectorEdgeHangupIsQuiet(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := newSocketpair(t)
		require.NoError(t, s.Add(p.a, 1, Readable|Writable, Edge))
		require.NotZero(t, waitEvent(t, s, 1).Ready&Writable)
		p.closeB(t)
		require.NotZero(t, waitEvent(t, s, 1).Ready&Hup)

		waits := requireQuiet(t, s, 500*time.Millisecond, "a hang-up reported twice")
		// poll(2): looks at 10, 30, 70, 150, 310ms, each a probe and a
		// return to the main poll (11); epoll and kqueue: one wait. A signal
		// the runtime sends the thread (EINTR) is a wait too, so the bound
		// leaves room for a few on a busy machine; a look every few
		// milliseconds, the defect this guards against, would be over 100.
		require.LessOrEqual(t, s.Counters().Waits-waits, uint64(24), "an idle Select woke too often")
	})
}

// An error that follows a reported hang-up is a new edge: a resting
// descriptor is looked at again within Traits().RestLatency.
func TestSelectorEdgeErrorAfterHangup(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := newSocketpair(t)
		require.NoError(t, s.Add(p.a, 1, Error|Hup, Edge))
		_, err := unix.Write(p.a, []byte("unread"))
		require.NoError(t, err)
		require.NoError(t, unix.Shutdown(p.b, unix.SHUT_RDWR))
		require.NotZero(t, waitEvent(t, s, 1).Ready&Hup)
		requireNoEvent(t, s, 1) // nothing new: resting, on poll(2)

		p.closeB(t) // data unread: a is reset (ECONNRESET)
		limit := time.Now().Add(s.Traits().RestLatency + 5*time.Second)
		for time.Now().Before(limit) {
			if ev, ok := eventFor(selectEvents(t, s, 4, time.Until(limit)), 1); ok {
				require.NotZero(t, ev.Ready&Error, "%v", ev)
				return
			}
		}
		t.Fatal("the error after a reported hang-up was never reported")
	})
}
