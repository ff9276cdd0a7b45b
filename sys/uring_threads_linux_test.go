//go:build linux

package sys

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Tests of what the uring backend must do so that its events say what a
// file has now, as epoll's do: completions are posted on the polling
// thread ("Threads" in uringSelector), checked when they may be stale
// (uring_fresh_linux.go), and a half-close nobody asked for is neither
// reported nor spun on ("Unasked conditions").

// elsewhere runs f on another goroutine and waits for it: the caller's
// goroutine parks, and an unlocked one may resume on another thread.
func elsewhere(f func()) {
	done := make(chan struct{})
	go func() { f(); close(done) }()
	<-done
}

// requireNoLook is requireNoEvent with a short wait: it submits what is
// queued, from the polling goroutine, and blocks long enough for the Go
// runtime to hand its processor to another thread, so that without the
// selector's own care the goroutine may come back on another thread.
func requireNoLook(t *testing.T, s Selector, key uint64) {
	t.Helper()
	evs := selectEvents(t, s, 16, 2*time.Millisecond)
	_, ok := eventFor(evs, key)
	require.False(t, ok, "key %d reported: %v", key, evs)
}

// An event caused from another goroutine is seen by a look right after it,
// with no wait: the request's completion runs on the polling thread, which
// the look itself enters the kernel on.
func TestUringLookRightAfterEvent(t *testing.T) {
	s := openUringOrSkip(t, uringSQEntries, uringCQEntries)
	for i := 0; i < 50; i++ {
		p := newSocketpair(t)
		key := uint64(i + 1)
		require.NoError(t, s.Add(p.a, key, Readable, Edge))
		requireNoLook(t, s, key) // submitted from the polling goroutine
		elsewhere(func() { writeByte(t, p.b) })
		ev, ok := eventFor(selectEvents(t, s, 4, 0), key)
		require.True(t, ok, "round %d: a look right after the write missed it", i)
		require.NotZero(t, ev.Ready&Readable)
		require.NoError(t, s.Delete(p.a))
	}
}

// A descriptor closed right after Delete is released at once: its peer
// reads the end of the stream straight away, as on epoll.
func TestUringCloseAfterDeleteAtOnce(t *testing.T) {
	s := openUringOrSkip(t, uringSQEntries, uringCQEntries)
	for i := 0; i < 50; i++ {
		for _, mode := range []Mode{Edge, Level} {
			p := newSocketpair(t)
			require.NoError(t, s.Add(p.a, 1, Readable, mode))
			requireNoLook(t, s, 1)
			elsewhere(func() {})
			require.NoError(t, s.Delete(p.a))
			p.closeA(t)
			var buf [1]byte
			n, err := unix.Read(p.b, buf[:])
			require.False(t, errors.Is(err, unix.EAGAIN), "round %d, mode %v: no end of stream right after close", i, mode)
			require.NoError(t, err)
			require.Zero(t, n)
		}
	}
}

// A Level completion posted between two Selects for data the caller then
// read is not reported: the next Select looks at the socket again.
func TestUringStaleLevelCompletion(t *testing.T) {
	s := openUringOrSkip(t, uringSQEntries, uringCQEntries)
	for _, mode := range []Mode{Level, Level | Oneshot, Edge | Oneshot} {
		p := newSocketpair(t)
		require.NoError(t, s.Add(p.a, 1, Readable, mode))
		requireNoEvent(t, s, 1) // armed
		writeByte(t, p.b)       // completes on this thread, before Select
		drainFd(t, p.a)
		requireNoEvent(t, s, 1)
		writeByte(t, p.b) // still armed, a oneshot too: it did not fire
		require.NotZero(t, waitEvent(t, s, 1).Ready&Readable, "mode %v", mode)
		require.NoError(t, s.Delete(p.a))
	}
}

// A peer's half-close is not reported to an interest without Readable or
// Hup (io_uring cannot leave POLLRDHUP out of a request), a blocking
// Select does not spin on it, and the interest's own readiness still
// comes: on every Select for Level, once for Oneshot.
func TestUringUnaskedHalfClose(t *testing.T) {
	s := openUringOrSkip(t, uringSQEntries, uringCQEntries)
	for _, mode := range []Mode{Level, Level | Oneshot, Edge | Oneshot} {
		p := newSocketpair(t)
		require.NoError(t, unix.Shutdown(p.b, unix.SHUT_WR))
		require.NoError(t, s.Add(p.a, 2, Error, mode))
		waits := requireQuiet(t, s, 30*time.Millisecond, "a half-close reported to Error")
		require.Less(t, s.Counters().Waits-waits, uint64(10), "mode %v: Select spun on the half-close", mode)
		require.NoError(t, s.Delete(p.a))

		fillFd(t, p.a)
		require.NoError(t, s.Add(p.a, 1, Writable|Error, mode))
		requireNoEvent(t, s, 1)
		waits = requireQuiet(t, s, 30*time.Millisecond, "a half-close reported to Writable|Error")
		require.Less(t, s.Counters().Waits-waits, uint64(10), "mode %v: Select spun on the half-close", mode)
		drainFd(t, p.b) // room to write again
		require.Equal(t, Writable, waitEvent(t, s, 1).Ready, "mode %v", mode)
		for i := 0; i < 3; i++ {
			ev, ok := eventFor(selectEvents(t, s, 4, 0), 1)
			require.Equal(t, mode&Oneshot == 0, ok, "mode %v, Select %d: reported again: %v", mode, i, ev)
		}
		// One request is left to remove: the peer sees the close at once.
		require.NoError(t, s.Delete(p.a))
		p.closeA(t)
		var buf [1]byte
		n, err := unix.Read(p.b, buf[:])
		require.NoError(t, err, "mode %v: a request still holds the socket", mode)
		require.Zero(t, n)
	}
}
