//go:build unix

package sys

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// After Close every method answers ErrClosed at once, on every backend: a
// closed selector must not reach a descriptor number the process has since
// reused (another selector's, or an unrelated pipe's).
func TestSelectorClosedRefusesEverything(t *testing.T) {
	for _, c := range selectorCases() {
		t.Run(c.name, func(t *testing.T) {
			s, err := c.open()
			require.NoError(t, err)
			p := newPipe(t)
			require.NoError(t, s.Add(p.a, 1, Readable, Edge))
			require.NoError(t, s.Close())

			// Something else takes the numbers the selector released.
			other := newPipe(t)
			writeByte(t, other.b)

			require.ErrorIs(t, s.Add(p.b, 2, Readable, Level), ErrClosed)
			require.ErrorIs(t, s.Modify(p.a, 1, Readable, Level), ErrClosed)
			require.ErrorIs(t, s.Delete(p.a), ErrClosed)
			require.ErrorIs(t, s.Drained(p.a, Readable), ErrClosed)
			start := time.Now()
			_, _, err = s.Select(make([]Event, 4), 300*time.Millisecond)
			require.ErrorIs(t, err, ErrClosed)
			require.Less(t, time.Since(start), 200*time.Millisecond, "Select waited on a closed selector")
			require.True(t, fdReadable(t, other.a), "a closed selector consumed another descriptor's data")
			require.NoError(t, s.Close())
			require.NoError(t, s.Wake())
		})
	}
}

// One answer per failure on every backend (the Selector contract).
func TestSelectorDescriptorErrors(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := newPipe(t)
		const notOpen = 1 << 22 // above any descriptor limit
		for name, err := range map[string]error{
			"Add":    s.Add(notOpen, 1, Readable, Level),
			"Modify": s.Modify(notOpen, 1, Readable, Level),
			"Delete": s.Delete(notOpen),
		} {
			require.ErrorIs(t, err, unix.EBADF, "%s of a descriptor that is not open", name)
		}
		for name, err := range map[string]error{
			"Modify": s.Modify(p.a, 1, Readable, Level),
			"Delete": s.Delete(p.a),
		} {
			require.ErrorIs(t, err, unix.ENOENT, "%s of an open descriptor that is not registered", name)
		}
		if !s.Traits().NativeEdge {
			require.ErrorIs(t, s.Drained(notOpen, Readable), unix.EBADF)
			require.ErrorIs(t, s.Drained(p.a, Readable), unix.ENOENT)
		}
		require.ErrorIs(t, s.Add(p.a, ReservedKey, Readable, Level), unix.EINVAL)
		require.NoError(t, s.Add(p.a, 1, Readable, Level))
		require.ErrorIs(t, s.Add(p.a, 1, Readable, Level), unix.EEXIST)
		require.ErrorIs(t, s.Modify(p.a, ReservedKey, Readable, Level), unix.EINVAL)

		// Registered, then closed without Delete.
		fd := p.a
		p.closeA(t)
		require.ErrorIs(t, s.Modify(fd, 1, Readable, Level), unix.EBADF)
		require.ErrorIs(t, s.Delete(fd), unix.EBADF)
		require.ErrorIs(t, s.Delete(fd), unix.EBADF)
	})
}

// Delete while another goroutine is blocked in Select lets the descriptor
// go: once it is closed, its peer sees the hang-up at once. poll(2) holds a
// reference to every file it waits on, so a blocked poll must be woken to
// let go of it.
func TestSelectorDeleteReleasesBlockedSelect(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := newSocketpair(t)
		require.NoError(t, s.Add(p.a, 1, Readable, Level))
		done := blockedSelect(t, s)
		require.NoError(t, s.Delete(p.a))
		p.closeA(t)

		released := peerSeesEOF(t, p.b, 2*time.Second)
		require.NoError(t, s.Wake()) // end the Select before any failure
		r := await(t, s, done)
		require.NoError(t, r.err)
		require.Empty(t, r.evs)
		require.True(t, released, "the peer saw no hang-up while Select was blocked: the closed descriptor is still held")
	})
}

// peerSeesEOF reads fd until EOF or until timeout passes.
func peerSeesEOF(t *testing.T, fd int, timeout time.Duration) bool {
	t.Helper()
	var buf [8]byte
	limit := time.Now().Add(timeout)
	for time.Now().Before(limit) {
		n, err := unix.Read(fd, buf[:])
		if err == nil && n == 0 {
			return true
		}
		require.True(t, errors.Is(err, unix.EAGAIN), "read: %v", err)
		waitReadable(t, fd, time.Until(limit))
	}
	return false
}

// waitReadable blocks in poll(2) until fd is readable or timeout passes.
func waitReadable(t *testing.T, fd int, timeout time.Duration) {
	t.Helper()
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, int(timeout/time.Millisecond)+1)
		if err != unix.EINTR {
			require.NoError(t, err)
			return
		}
	}
}

func TestSelectorClosedWithoutDelete(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := readablePipe(t)
		require.NoError(t, s.Add(p.a, 1, Readable, Level))
		waitEvent(t, s, 1)
		fd := p.a
		p.closeA(t)

		waits := requireQuiet(t, s, quiet, "a descriptor closed without Delete reported")
		// One poll sees POLLNVAL and disarms, one waits out the rest: no
		// spinning.
		require.LessOrEqual(t, s.Counters().Waits-waits, uint64(3))
		// Its entry goes with Delete, which answers as epoll does for a
		// descriptor that is no longer open.
		require.ErrorIs(t, s.Delete(fd), unix.EBADF)
	})
}

func TestSelectorRegistrationErrors(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := newPipe(t)
		require.NoError(t, s.Add(p.a, 1, Readable, Level))
		require.Error(t, s.Add(p.a, 1, Readable, Level), "added twice")
		require.Error(t, s.Modify(p.b, 1, Readable, Level), "not registered")
		require.Error(t, s.Delete(p.b), "not registered")
		const badFd = 1 << 22 // above any descriptor limit
		require.Error(t, s.Add(badFd, 1, Readable, Level))
		require.Error(t, s.Add(-1, 1, Readable, Level))
	})
}

func TestSelectorCloseTwiceAndWakeAfterClose(t *testing.T) {
	for _, c := range selectorCases() {
		t.Run(c.name, func(t *testing.T) {
			s, err := c.open()
			require.NoError(t, err)
			require.NoError(t, s.Close())
			require.NoError(t, s.Close())
			require.NoError(t, s.Wake())
		})
	}
}

func TestNewUnknownBackend(t *testing.T) {
	_, err := New("no-such-backend")
	require.ErrorIs(t, err, ErrUnknownBackend)
	_, err = NewWithOptions("", Options{Wait: "spin"})
	require.ErrorIs(t, err, ErrUnknownWait)
	// The default way to wait was called "poll" before it became "look":
	// the old name is refused with the ones that are valid.
	_, err = NewWithOptions("", Options{Wait: "poll"})
	require.ErrorIs(t, err, ErrUnknownWait)
	require.ErrorContains(t, err, `"look"`)
	require.Contains(t, Backends(), BackendPoll)
	require.Equal(t, defaultBackend, Backends()[0])
}
