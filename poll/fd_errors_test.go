package poll

// Errors of the descriptor API, and Close: every misuse returns the
// documented sentinel (matched with errors.Is), never panics, and leaves the
// Poll working.

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/sys"
)

// requireStillWorks registers a fresh readable socket under tok and
// requires the next Poll to report it: the Poll was not corrupted by
// whatever the test did before.
func requireStillWorks(t testing.TB, p *Poll, tok Token) {
	t.Helper()
	a, b := socketPair(t)
	writeFd(t, b, []byte("x"))
	require.NoError(t, p.Register(Fd(a), tok, Readable, Level))
	ev := NewEvents(16)
	requireEvent(t, p, ev, tok, Readable)
	require.NoError(t, p.Deregister(Fd(a)))
}

// Close while another goroutine is blocked in Poll(-1): that Poll returns
// ErrClosed promptly, and so does Close's caller's next Poll.
func TestFdCloseWakesBlockedPoll(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		a, _ := socketPair(t)
		p := newPoll(t)
		require.NoError(t, p.Register(Fd(a), 1, Readable, Level))
		res := make(chan error, 1)
		go func() {
			_, err := p.Poll(NewEvents(4), -1)
			res <- err
		}()
		waitSelecting(t, p, 0)
		closed := make(chan error, 1)
		start := time.Now()
		go func() { closed <- p.Close() }()
		select {
		case err := <-res:
			require.ErrorIs(t, err, ErrClosed)
		case <-time.After(eventWait):
			t.Fatal("Poll(-1) still blocked after Close")
		}
		select {
		case err := <-closed:
			require.NoError(t, err)
		case <-time.After(eventWait):
			t.Fatal("Close did not return")
		}
		require.Less(t, time.Since(start), time.Second, "Close took too long to wake the Poll")
	})
}

// After Close every call returns ErrClosed, double Close included; Stats
// still works. Registered descriptors are not closed by it.
func TestFdUseAfterClose(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		a, b := socketPair(t)
		c, _ := socketPair(t)
		p := newPoll(t)
		require.NoError(t, p.Register(Fd(a), 1, Readable, Level))
		require.NoError(t, p.Close())

		ev := NewEvents(4)
		_, err := p.Poll(ev, 0)
		require.ErrorIs(t, err, ErrClosed)
		_, err = p.Poll(ev, -1)
		require.ErrorIs(t, err, ErrClosed)
		_, err = p.Poll(ev, time.Millisecond)
		require.ErrorIs(t, err, ErrClosed)
		require.Zero(t, ev.Len())

		require.ErrorIs(t, p.Register(Fd(c), 2, Readable, Level), ErrClosed)
		require.ErrorIs(t, p.Register(Fd(a), 2, Readable, Level), ErrClosed)
		require.ErrorIs(t, p.Reregister(Fd(a), 3, Writable, Edge), ErrClosed)
		require.ErrorIs(t, p.Reregister(Fd(c), 3, Writable, Edge), ErrClosed)
		require.ErrorIs(t, p.Deregister(Fd(a)), ErrClosed)
		require.ErrorIs(t, p.Deregister(Fd(c)), ErrClosed)
		require.ErrorIs(t, p.Close(), ErrClosed)
		require.ErrorIs(t, p.Close(), ErrClosed)
		_ = p.Stats()

		// The descriptors are still open and connected.
		writeFd(t, b, []byte("x"))
		require.Equal(t, 1, drain(t, a))
	})
}

// Register of a descriptor already registered: ErrAlreadyRegistered, with
// any token, interest or mode, and the first registration is unchanged.
func TestFdDoubleRegister(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		a, b := socketPair(t)
		p := newPoll(t)
		require.NoError(t, p.Register(Fd(a), 1, Readable, Level))
		require.ErrorIs(t, p.Register(Fd(a), 1, Readable, Level), ErrAlreadyRegistered)
		require.ErrorIs(t, p.Register(Fd(a), 2, Writable, Edge), ErrAlreadyRegistered)
		require.ErrorIs(t, p.Register(Fd(a), 3, Readable, Oneshot), ErrAlreadyRegistered)
		ev := NewEvents(4)
		requireNoEvents(t, p, ev)
		writeFd(t, b, []byte("x"))
		requireEvent(t, p, ev, 1, Readable)
		requireNext(t, p, ev, 1, Readable)
		// After Deregister it may be registered again.
		require.NoError(t, p.Deregister(Fd(a)))
		require.NoError(t, p.Register(Fd(a), 4, Readable, Level))
		requireNext(t, p, ev, 4, Readable)
	})
}

// Deregister or Reregister of a descriptor not registered (never, or no
// longer): ErrNotRegistered.
func TestFdNotRegistered(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		a, _ := socketPair(t)
		c, _ := socketPair(t)
		p := newPoll(t)
		require.ErrorIs(t, p.Deregister(Fd(a)), ErrNotRegistered)
		require.ErrorIs(t, p.Reregister(Fd(a), 1, Readable, Level), ErrNotRegistered)
		// A number far beyond the table.
		require.ErrorIs(t, p.Deregister(Fd(1<<20)), ErrNotRegistered)
		require.ErrorIs(t, p.Reregister(Fd(1<<20), 1, Readable, Level), ErrNotRegistered)

		require.NoError(t, p.Register(Fd(c), 1, Readable, Level))
		require.NoError(t, p.Deregister(Fd(c)))
		require.ErrorIs(t, p.Deregister(Fd(c)), ErrNotRegistered)
		require.ErrorIs(t, p.Reregister(Fd(c), 1, Readable, Level), ErrNotRegistered)
		requireStillWorks(t, p, 5)
	})
}

// Invalid descriptors: negative, beyond the key space, not open. An error,
// never a panic; ErrInvalidFd where the descriptor itself is at fault.
func TestFdInvalidDescriptor(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		p := newPoll(t)
		for _, fd := range []Fd{-1, -2, Fd(-1 << 40), 1 << 31, 1 << 40} {
			require.ErrorIs(t, p.Register(fd, 1, Readable, Level), ErrInvalidFd, "Register(%d)", fd)
			require.ErrorIs(t, p.Reregister(fd, 1, Readable, Level), ErrInvalidFd, "Reregister(%d)", fd)
			require.ErrorIs(t, p.Deregister(fd), ErrInvalidFd, "Deregister(%d)", fd)
		}

		// A closed descriptor.
		a, _ := socketPair(t)
		closeFd(t, a)
		require.ErrorIs(t, p.Register(Fd(a), 1, Readable, Level), ErrInvalidFd, "Register of closed fd %d", a)
		require.ErrorIs(t, p.Deregister(Fd(a)), ErrNotRegistered)

		// An open number well above any in use, never opened.
		require.ErrorIs(t, p.Register(Fd(1<<20), 1, Readable, Level), ErrInvalidFd)
		requireStillWorks(t, p, 5)
	})
}

// A regular file cannot be watched by epoll (EPERM): ErrInvalidFd, with the
// system error in the chain.
func TestFdRegularFileOnEpoll(t *testing.T) {
	if !slices.Contains(sys.Backends(), sys.BackendEpoll) {
		t.Skip("no epoll backend in this build")
	}
	p := newPollBackend(t, sys.BackendEpoll)
	f, err := os.Create(filepath.Join(t.TempDir(), "regular"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	err = p.Register(Fd(f.Fd()), 1, Readable, Level)
	require.ErrorIs(t, err, ErrInvalidFd)
	require.ErrorIs(t, err, unix.EPERM)
	require.ErrorIs(t, p.Deregister(Fd(f.Fd())), ErrNotRegistered)
	requireStillWorks(t, p, 5)
}

// The reserved token is refused by Register and Reregister; a refused
// Reregister leaves the registration as it was.
func TestFdReservedToken(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		a, b := socketPair(t)
		c, _ := socketPair(t)
		p := newPoll(t)
		reserved := Token(^uint64(0))
		require.ErrorIs(t, p.Register(Fd(c), reserved, Readable, Level), ErrReservedToken)
		require.ErrorIs(t, Fd(c).Register(p, reserved, Readable, Level), ErrReservedToken)
		require.ErrorIs(t, p.Deregister(Fd(c)), ErrNotRegistered, "a refused Register must not register")

		require.NoError(t, p.Register(Fd(a), 1, Readable, Level))
		require.ErrorIs(t, p.Reregister(Fd(a), reserved, Readable, Level), ErrReservedToken)
		require.ErrorIs(t, Fd(a).Reregister(p, reserved, Readable, Level), ErrReservedToken)
		writeFd(t, b, []byte("x"))
		requireEvent(t, p, NewEvents(4), 1, Readable)
		// The largest usable token works.
		require.NoError(t, p.Reregister(Fd(a), reserved-1, Readable, Level))
		requireNext(t, p, NewEvents(4), reserved-1, Readable)
	})
}

// Interest bits that are not readiness kinds, and trigger modes that are
// not Edge or Level (plus Oneshot): ErrInvalidInterest and ErrInvalidOpts,
// from Register, Reregister and the Evented methods called directly.
func TestFdInvalidInterestAndOpts(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		a, b := socketPair(t)
		c, _ := socketPair(t)
		p := newPoll(t)
		require.NoError(t, p.Register(Fd(a), 1, Readable, Level))
		for _, interest := range []Ready{1 << 5, 1 << 31, Readable | 1<<7, ^Ready(0)} {
			require.ErrorIs(t, p.Register(Fd(c), 2, interest, Level), ErrInvalidInterest, "%#x", uint32(interest))
			require.ErrorIs(t, Fd(c).Register(p, 2, interest, Level), ErrInvalidInterest)
			require.ErrorIs(t, p.Reregister(Fd(a), 2, interest, Level), ErrInvalidInterest)
			require.ErrorIs(t, Fd(a).Reregister(p, 2, interest, Level), ErrInvalidInterest)
		}
		for _, opts := range []PollOpt{Edge | Level, Edge | Level | Oneshot, 1 << 3, 1 << 7, Level | 1<<4, ^PollOpt(0)} {
			require.ErrorIs(t, p.Register(Fd(c), 2, Readable, opts), ErrInvalidOpts, "%#x", uint8(opts))
			require.ErrorIs(t, Fd(c).Register(p, 2, Readable, opts), ErrInvalidOpts)
			require.ErrorIs(t, p.Reregister(Fd(a), 2, Readable, opts), ErrInvalidOpts)
			require.ErrorIs(t, Fd(a).Reregister(p, 2, Readable, opts), ErrInvalidOpts)
		}
		require.ErrorIs(t, p.Deregister(Fd(c)), ErrNotRegistered, "a refused Register must not register")
		// The refused Reregisters left a as it was.
		writeFd(t, b, []byte("x"))
		ev := NewEvents(4)
		requireEvent(t, p, ev, 1, Readable)
		requireNext(t, p, ev, 1, Readable)
	})
}

// Nil and empty arguments: ErrInvalidArgument, never a panic.
func TestFdInvalidArguments(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		p := newPoll(t)
		_, err := p.Poll(nil, 0)
		require.ErrorIs(t, err, ErrInvalidArgument)
		_, err = p.Poll(nil, -1)
		require.ErrorIs(t, err, ErrInvalidArgument)
		_, err = p.Poll(&Events{}, -1)
		require.ErrorIs(t, err, ErrInvalidArgument)
		require.ErrorIs(t, p.Register(nil, 1, Readable, Level), ErrInvalidArgument)
		require.ErrorIs(t, p.Reregister(nil, 1, Readable, Level), ErrInvalidArgument)
		require.ErrorIs(t, p.Deregister(nil), ErrInvalidArgument)
		// NewEvents never makes an unusable buffer.
		for _, c := range []int{-1, 0, 1} {
			ev := NewEvents(c)
			require.Equal(t, 1, ev.Cap())
			n, err := p.Poll(ev, 0)
			require.NoError(t, err)
			require.Zero(t, n)
		}
		requireStillWorks(t, p, 5)
	})
}

// A descriptor closed while registered, whose number is then reused: the
// new descriptor is refused with ErrAlreadyRegistered (documented on Fd)
// until the stale registration is deregistered; after that the number
// works normally and nothing of the old registration is reported.
func TestFdClosedWhileRegisteredThenReused(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		p := newPoll(t)
		a, b := socketPair(t)
		require.NoError(t, p.Register(Fd(a), 1, Readable, Level))
		closeFd(t, a)
		closeFd(t, b)
		c, d := socketPair(t)
		if c != a {
			t.Skipf("descriptor %d was not reused (got %d)", a, c)
		}
		require.ErrorIs(t, p.Register(Fd(c), 2, Readable, Level), ErrAlreadyRegistered)
		require.NoError(t, p.Deregister(Fd(c)))
		require.NoError(t, p.Register(Fd(c), 2, Readable, Level))
		ev := NewEvents(4)
		requireNoEvents(t, p, ev)
		writeFd(t, d, []byte("x"))
		requireEvent(t, p, ev, 2, Readable)
		require.Equal(t, []Event{{Token: 2, Ready: Readable}}, pollEvents(t, p, ev, 0))
	})
}

// NewWithConfig with an unknown backend or a bad config fails cleanly.
func TestFdNewWithConfigErrors(t *testing.T) {
	_, err := NewWithConfig(Config{Backend: "no-such-backend"})
	require.ErrorIs(t, err, sys.ErrUnknownBackend)
	_, err = NewWithConfig(Config{WheelTick: -1})
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = NewWithConfig(Config{WheelSlots: -1})
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.False(t, errors.Is(err, ErrClosed))
}
