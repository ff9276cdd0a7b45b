//go:build linux

package sys

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The io_uring backend's own behaviour, on the real ring: what the shared
// Selector tests (which run on it too, as on every backend in Backends)
// cannot reach.

// openUringOrSkip opens a uring selector with the given ring sizes, or
// skips where this kernel has no usable io_uring.
func openUringOrSkip(t *testing.T, sq, cq uint32) *uringSelector {
	t.Helper()
	if !slices.Contains(Backends(), BackendUring) {
		t.Skip("io_uring missing or refused on this kernel")
	}
	s, err := openUringSized(sq, cq)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s.(*uringSelector)
}

// uring is offered exactly where it opens, and an explicit choice that the
// kernel refuses fails with ErrBackendUnavailable; the default stays epoll.
func TestUringAvailability(t *testing.T) {
	s, err := New(BackendUring)
	if slices.Contains(Backends(), BackendUring) {
		require.NoError(t, err)
		require.Equal(t, BackendUring, s.Name())
		require.NoError(t, s.Close())
	} else {
		require.ErrorIs(t, err, ErrBackendUnavailable)
	}
	def, err := New("")
	require.NoError(t, err)
	require.Equal(t, BackendEpoll, def.Name())
	require.NoError(t, def.Close())
	require.Equal(t, BackendEpoll, Backends()[0])
}

// The refusals that mean "no io_uring here" are told apart from real
// errors: they become ErrBackendUnavailable.
func TestUringRefusals(t *testing.T) {
	for _, errno := range []unix.Errno{unix.ENOSYS, unix.EPERM, unix.EACCES} {
		require.True(t, uringRefused(errno), "%v", errno)
	}
	require.True(t, uringRefused(errors.New("kernel io_uring lacks features")))
	require.False(t, uringRefused(unix.EMFILE), "out of descriptors is an error, not a missing feature")
}

// Completions already in the CQ ring are read in user space: a Select
// that finds one makes no system call.
func TestUringSelectReadsRingWithoutSyscall(t *testing.T) {
	s := openUringOrSkip(t, uringSQEntries, uringCQEntries)
	p := newSocketpair(t)
	require.NoError(t, s.Add(p.a, 1, Readable, Edge))
	requireNoEvent(t, s, 1) // submits the poll
	writeByte(t, p.b)
	limit := time.Now().Add(5 * time.Second)
	for atomic.LoadUint32(s.ring.cqTail) == atomic.LoadUint32(s.ring.cqHead) {
		require.True(t, time.Now().Before(limit), "no completion posted within 5s")
		runtime.Gosched()
	}
	waits := s.Counters().Waits
	evs := selectEvents(t, s, 4, 0)
	require.Len(t, evs, 1)
	require.Equal(t, Event{Key: 1, Ready: Readable}, evs[0])
	require.Equal(t, waits, s.Counters().Waits, "Select entered the kernel for a completion already in the ring")
}

// A CQ too small for the wake-ups between two Selects ends multishot polls
// (the kernel cannot post their completions); Select re-arms each, so every
// descriptor is reported, and again on its next edge. A second write before
// the drain keeps every descriptor ready and quiet while the CQ overflows:
// the re-armed requests must not spin on it.
func TestUringMultishotEndsResubmitted(t *testing.T) {
	s := openUringOrSkip(t, 4, 8)
	const n = 32
	pairs := make([]*fdPair, n)
	for i := range pairs {
		pairs[i] = newSocketpair(t)
		require.NoError(t, s.Add(pairs[i].a, uint64(i), Readable, Edge))
	}
	requireNoEvent(t, s, 0) // submits the polls
	for round := 0; round < 2; round++ {
		for _, p := range pairs {
			writeByte(t, p.b)
		}

		seen := map[uint64]bool{}
		limit := time.Now().Add(5 * time.Second)
		for len(seen) < n && time.Now().Before(limit) {
			for _, ev := range selectEvents(t, s, 8, time.Until(limit)) {
				require.NotZero(t, ev.Ready&Readable)
				seen[ev.Key] = true
			}
		}
		require.Len(t, seen, n, "round %d: descriptors reported", round)
		if round == 0 {
			for _, p := range pairs {
				drainFd(t, p.a)
				require.NoError(t, s.Drained(p.a, Readable)) // emulated edge
			}
		}
	}
	// All quiet and all readable, more of them than the CQ holds: nothing
	// to report, and no spinning on requests that end and are re-armed.
	for _, p := range pairs {
		writeByte(t, p.b)
	}
	waits := s.Counters().Waits
	require.Empty(t, selectEvents(t, s, 8, 100*time.Millisecond))
	require.LessOrEqual(t, s.Counters().Waits-waits, uint64(20), "Select spun on quiet descriptors")
	// Re-armed, each is reported: what arrived while it was quiet is there.
	for _, p := range pairs {
		require.NoError(t, s.Drained(p.a, Readable))
	}
	seen := map[uint64]bool{}
	limit := time.Now().Add(5 * time.Second)
	for len(seen) < n && time.Now().Before(limit) {
		for _, ev := range selectEvents(t, s, 8, time.Until(limit)) {
			seen[ev.Key] = true
		}
	}
	require.Len(t, seen, n, "descriptors reported after Drained")
}

// io_uring runs a request's completion work on the thread that submitted
// it; when that thread exits (a goroutine that ends locked to its thread)
// the kernel cancels the request. Select submits it again, so nothing is
// lost, in every mode.
func TestUringSubmitterThreadExits(t *testing.T) {
	for _, mode := range []Mode{Edge, Level, Edge | Oneshot} {
		s := openUringOrSkip(t, uringSQEntries, uringCQEntries)
		p := newSocketpair(t)
		done := make(chan error)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread exits with us
			err := s.Add(p.a, 1, Readable, mode)
			if err == nil {
				_, _, err = s.Select(make([]Event, 4), 0) // submits from this thread
			}
			done <- err
		}()
		require.NoError(t, <-done)
		writeByte(t, p.b)
		start := time.Now()
		require.NotZero(t, waitEvent(t, s, 1).Ready&Readable, "mode %v", mode)
		// Generous for a loaded machine; a re-arm left for the end of the
		// wait would take all of waitEvent's 5s.
		require.Less(t, time.Since(start), 3*time.Second, "mode %v: reported only when the wait ran out", mode)
	}
}

// A descriptor closed after Delete is really closed at once, with no
// Select running: the removal does not wait for one, and the poll request
// held a reference to the file until then.
func TestUringDeleteReleasesFile(t *testing.T) {
	s := openUringOrSkip(t, uringSQEntries, uringCQEntries)
	for _, mode := range []Mode{Edge, Level} {
		p := newSocketpair(t)
		require.NoError(t, s.Add(p.a, 1, Readable, mode))
		requireNoEvent(t, s, 1) // the poll is in the kernel now
		require.NoError(t, s.Delete(p.a))
		p.closeA(t)
		require.True(t, peerSeesEOF(t, p.b, 2*time.Second), "mode %v: the peer saw no hang-up", mode)
	}
}

// Timeouts below a millisecond are kept (IORING_ENTER_EXT_ARG takes a
// timespec), not rounded up to one. A loaded machine may wake us late, so
// the test asks only that one of several waits be well under a
// millisecond, and that none end early.
func TestUringSubMillisecondTimeout(t *testing.T) {
	s := openUringOrSkip(t, uringSQEntries, uringCQEntries)
	const timeout = 200 * time.Microsecond
	best := time.Hour
	for i := 0; i < 50; i++ {
		start := time.Now()
		require.Empty(t, selectEvents(t, s, 4, timeout))
		took := time.Since(start)
		require.GreaterOrEqual(t, took, timeout)
		best = min(best, took)
	}
	require.Less(t, best, 800*time.Microsecond, "no wait of %v took less than 800µs", timeout)
}

// A file without a poll method is refused with EPERM, as epoll refuses
// it, and one with a poll method of an uncommon type is taken.
func TestUringUnwatchableFiles(t *testing.T) {
	s := openUringOrSkip(t, uringSQEntries, uringCQEntries)
	f, err := os.Create(filepath.Join(t.TempDir(), "regular"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	null, err := os.Open(os.DevNull)
	require.NoError(t, err)
	t.Cleanup(func() { _ = null.Close() })
	for _, fd := range []int{int(f.Fd()), int(null.Fd())} {
		require.ErrorIs(t, s.Add(fd, 1, Readable, Edge), unix.EPERM)
		require.ErrorIs(t, s.Delete(fd), unix.ENOENT)
	}
	// /dev/ptmx is a character device with a poll method.
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no /dev/ptmx: %v", err)
	}
	t.Cleanup(func() { _ = ptmx.Close() })
	require.NoError(t, s.Add(int(ptmx.Fd()), 1, Writable, Edge))
	require.NoError(t, s.Delete(int(ptmx.Fd())))
}

// Wake makes the next Select return at once, even a zero-timeout one, when
// the waker's poll was submitted by another thread (its completion runs
// there, a little later).
func TestUringWakeThenLook(t *testing.T) {
	if !slices.Contains(Backends(), BackendUring) {
		t.Skip("io_uring missing or refused on this kernel")
	}
	opened := make(chan Selector)
	release := make(chan struct{})
	go func() {
		runtime.LockOSThread() // the opener's thread submits the waker's poll and stays
		defer runtime.UnlockOSThread()
		s, err := openUringSized(uringSQEntries, uringCQEntries)
		if err != nil {
			close(opened)
			return
		}
		opened <- s
		<-release
	}()
	s, ok := <-opened
	require.True(t, ok, "open failed")
	t.Cleanup(func() { close(release); require.NoError(t, s.Close()) })
	buf := make([]Event, 4)
	for i := 0; i < 200; i++ {
		require.NoError(t, s.Wake())
		_, woken, err := s.Select(buf, 0)
		require.NoError(t, err)
		require.True(t, woken, "round %d: the Select after Wake did not report it", i)
	}
}
