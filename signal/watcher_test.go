//go:build unix

package signal

import (
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/onpoll/polltest"
	"github.com/unipoll/unipoll/internal/sigrelay"
	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/poll"
)

// A signal sent to the process reaches the Watcher's Poll, TryRecv returns it
// once, and the Watcher is quiet afterwards.
func TestSignalToSelf(t *testing.T) {
	for _, opts := range []poll.PollOpt{poll.Edge, poll.Level, poll.Oneshot} {
		t.Run(opts.String(), func(t *testing.T) {
			p := polltest.New(t)
			w := newWatcher(t, syscall.SIGUSR1)
			require.NoError(t, p.Register(w, 1, poll.Readable, opts))
			expectNoEvent(t, p, 1)

			raise(t, syscall.SIGUSR1)
			require.Equal(t, poll.Readable, waitEvent(t, p, 1))
			if opts.IsLevel() && !opts.IsOneshot() {
				// Level: reported again while the signal is pending.
				require.Contains(t, pollOnce(t, p, 0), poll.Token(1))
			}
			sig, ok := w.TryRecv()
			require.True(t, ok)
			require.Equal(t, syscall.SIGUSR1, sig)
			sig, ok = w.TryRecv()
			require.False(t, ok, "TryRecv returned %v a second time", sig)
			expectNoEvent(t, p, 1)
			require.Zero(t, w.Pending())
		})
	}
}

// Edge: every delivery is a new edge, also while the signal is pending;
// the consumer that takes everything after each event misses nothing.
func TestEdgePerDelivery(t *testing.T) {
	p := polltest.New(t)
	w := newWatcher(t, syscall.SIGUSR2)
	require.NoError(t, p.Register(w, 1, poll.Readable, poll.Edge))
	for i := range 3 {
		raise(t, syscall.SIGUSR2)
		testsupport.WaitFor(t, "delivery", func() bool { return w.Pending() == uint64(i+1) })
		waitEvent(t, p, 1)
		expectNoEvent(t, p, 1)
	}
	var got []uint64
	for sig, n := range w.Drain() {
		require.Equal(t, syscall.SIGUSR2, sig)
		got = append(got, n)
	}
	require.Equal(t, []uint64{3}, got, "three deliveries, each waited for, counted once each")
	expectNoEvent(t, p, 1)
}

// Registering a Watcher that already has signals pending reports it at once
// (rule 5); signals that arrive while it is deregistered stay pending.
func TestRegisterWhilePending(t *testing.T) {
	p := polltest.New(t)
	w := newWatcher(t, syscall.SIGWINCH)
	raise(t, syscall.SIGWINCH)
	testsupport.WaitFor(t, "delivery", func() bool { return w.Pending() == 1 })
	require.NoError(t, p.Register(w, 7, poll.Readable, poll.Edge))
	require.Contains(t, pollOnce(t, p, 0), poll.Token(7))

	require.NoError(t, p.Deregister(w))
	raise(t, syscall.SIGWINCH)
	testsupport.WaitFor(t, "delivery", func() bool { return w.Pending() == 2 })
	expectNoEvent(t, p, 7)
	require.NoError(t, p.Register(w, 8, poll.Readable, poll.Level))
	require.Contains(t, pollOnce(t, p, 0), poll.Token(8))
	for sig, n := range w.Drain() {
		require.Equal(t, syscall.SIGWINCH, sig)
		require.Equal(t, uint64(2), n)
	}
	expectNoEvent(t, p, 8)
}

// Several signals: TryRecv returns each pending one in turn, so a signal that
// keeps arriving cannot hide another.
func TestNextTakesTurns(t *testing.T) {
	w := newWatcher(t, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGUSR1)
	require.Equal(t, []os.Signal{syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH}, w.Signals())
	raise(t, syscall.SIGUSR1)
	raise(t, syscall.SIGUSR2)
	testsupport.WaitFor(t, "two deliveries", func() bool { return w.Pending() == 2 })
	first, ok := w.TryRecv()
	require.True(t, ok)
	// The first signal arrives again before the second is taken.
	raise(t, first.(syscall.Signal))
	testsupport.WaitFor(t, "third delivery", func() bool { return w.Pending() == 2 })
	second, ok := w.TryRecv()
	require.True(t, ok)
	require.NotEqual(t, first, second, "TryRecv returned %v twice while %s waited", first, "another signal")
	third, ok := w.TryRecv()
	require.True(t, ok)
	require.Equal(t, first, third)
	_, ok = w.TryRecv()
	require.False(t, ok)
}

// Two Polls, one Watcher each, both watching SIGUSR1: both see every
// delivery, with equal counts.
func TestTwoPollsOneSignal(t *testing.T) {
	p1, p2 := polltest.New(t), polltest.New(t)
	w1, w2 := newWatcher(t, syscall.SIGUSR1), newWatcher(t, syscall.SIGUSR1)
	require.NoError(t, p1.Register(w1, 1, poll.Readable, poll.Edge))
	require.NoError(t, p2.Register(w2, 2, poll.Readable, poll.Level))
	require.Equal(t, 2, sigrelay.Subscribed(syscall.SIGUSR1))
	const n = 20
	for i := range n {
		raise(t, syscall.SIGUSR1)
		testsupport.WaitFor(t, "delivery to both", func() bool { return w1.Pending() == uint64(i+1) && w2.Pending() == uint64(i+1) })
		waitEvent(t, p1, 1)
		waitEvent(t, p2, 2)
	}
	for _, w := range []*Watcher{w1, w2} {
		total := uint64(0)
		for _, c := range w.Drain() {
			total += c
		}
		require.Equal(t, uint64(n), total)
	}
}

// Closing one Watcher leaves the other receiving, and the closed one is
// never reported again.
func TestCloseOneKeepsOther(t *testing.T) {
	p := polltest.New(t)
	a, b := newWatcher(t, syscall.SIGUSR2), newWatcher(t, syscall.SIGUSR2, syscall.SIGWINCH)
	require.NoError(t, p.Register(a, 1, poll.Readable, poll.Level))
	require.NoError(t, p.Register(b, 2, poll.Readable, poll.Level))
	raise(t, syscall.SIGUSR2)
	testsupport.WaitFor(t, "delivery to both", func() bool { return a.Pending() == 1 && b.Pending() == 1 })
	require.NoError(t, a.Close())
	require.Equal(t, 1, sigrelay.Subscribed(syscall.SIGUSR2))
	got := pollOnce(t, p, 0)
	require.NotContains(t, got, poll.Token(1), "a closed Watcher was reported (rule 7)")
	require.Contains(t, got, poll.Token(2))
	raise(t, syscall.SIGUSR2)
	testsupport.WaitFor(t, "second delivery", func() bool { return b.Pending() == 2 })
	_, ok := a.TryRecv()
	require.False(t, ok)
	require.Zero(t, a.Pending())
	sig, ok := b.TryRecv()
	require.True(t, ok)
	require.Equal(t, syscall.SIGUSR2, sig)
	require.NoError(t, b.Close())
	require.Zero(t, sigrelay.Active(), "relay entries left after the last Watcher closed")
}

// Bad input gets an exported sentinel, never a panic.
func TestBadInput(t *testing.T) {
	cases := []struct {
		name string
		sigs []os.Signal
		want error
	}{
		{"no signal", nil, ErrInvalidArgument},
		{"nil signal", []os.Signal{syscall.SIGUSR1, nil}, ErrInvalidArgument},
		{"SIGKILL", []os.Signal{syscall.SIGKILL}, ErrUncatchable},
		{"SIGSTOP", []os.Signal{syscall.SIGUSR1, syscall.SIGSTOP}, ErrUncatchable},
		{"zero", []os.Signal{syscall.Signal(0)}, ErrInvalidArgument},
		{"negative", []os.Signal{syscall.Signal(-1)}, ErrInvalidArgument},
		{"too large", []os.Signal{syscall.Signal(65)}, ErrInvalidArgument},
		{"not a syscall.Signal", []os.Signal{fakeSignal{}}, ErrInvalidArgument},
	}
	for _, c := range cases {
		w, err := New(c.sigs...)
		require.ErrorIs(t, err, c.want, c.name)
		require.Nil(t, w, c.name)
	}
	require.Zero(t, sigrelay.Active(), "a refused New subscribed to something")

	p := polltest.New(t)
	for _, w := range []*Watcher{nil, {}} {
		require.ErrorIs(t, w.Close(), ErrInvalidArgument)
		require.ErrorIs(t, p.Register(w, 1, poll.Readable, poll.Edge), ErrInvalidArgument)
		require.ErrorIs(t, w.Reregister(p, 1, poll.Readable, poll.Edge), ErrInvalidArgument)
		require.ErrorIs(t, w.Deregister(p), ErrInvalidArgument)
		_, ok := w.TryRecv()
		require.False(t, ok)
		require.Zero(t, w.Pending())
		require.Nil(t, w.Signals())
		for range w.Drain() {
			t.Fatal("a zero Watcher yielded a signal")
		}
	}

	w := newWatcher(t, syscall.SIGUSR1)
	require.ErrorIs(t, w.Register(nil, 1, poll.Readable, poll.Edge), ErrInvalidArgument)
	require.ErrorIs(t, p.Deregister(w), poll.ErrNotRegistered)
	require.ErrorIs(t, p.Reregister(w, 1, poll.Readable, poll.Edge), poll.ErrNotRegistered)
	require.NoError(t, p.Register(w, 1, poll.Readable, poll.Edge))
	require.ErrorIs(t, p.Register(w, 2, poll.Readable, poll.Edge), poll.ErrAlreadyRegistered)
	q := polltest.New(t)
	require.ErrorIs(t, q.Register(w, 1, poll.Readable, poll.Edge), poll.ErrRegisteredElsewhere)
	require.ErrorIs(t, q.Deregister(w), poll.ErrRegisteredElsewhere)
	require.NoError(t, w.Close())
	require.ErrorIs(t, w.Close(), ErrClosed)
	require.ErrorIs(t, p.Register(w, 3, poll.Readable, poll.Edge), ErrClosed)
	require.ErrorIs(t, p.Deregister(w), ErrClosed)
	_, ok := w.TryRecv()
	require.False(t, ok)
}

type fakeSignal struct{}

func (fakeSignal) String() string { return "fake" }
func (fakeSignal) Signal()        {}

// A Watcher moves to another Poll once it is deregistered, or once its Poll
// is closed, keeping what is pending.
func TestMoveBetweenPolls(t *testing.T) {
	w := newWatcher(t, syscall.SIGUSR1)
	p1, p2 := polltest.New(t), polltest.New(t)
	require.NoError(t, p1.Register(w, 1, poll.Readable, poll.Edge))
	raise(t, syscall.SIGUSR1)
	waitEvent(t, p1, 1)
	require.NoError(t, p1.Deregister(w))
	require.NoError(t, p2.Register(w, 2, poll.Readable, poll.Edge))
	require.Contains(t, pollOnce(t, p2, 0), poll.Token(2), "pending signal not reported after the move (rule 5)")
	require.NoError(t, p2.Close())
	p3 := polltest.New(t)
	require.NoError(t, p3.Register(w, 3, poll.Readable, poll.Level))
	raise(t, syscall.SIGUSR1)
	testsupport.WaitFor(t, "second delivery", func() bool { return w.Pending() == 2 })
	waitEvent(t, p3, 3)
	for _, n := range w.Drain() {
		require.Equal(t, uint64(2), n)
	}
	expectNoEvent(t, p1, 1)
}

func TestErrorsMatch(t *testing.T) {
	require.True(t, errors.Is(ErrClosed, poll.ErrClosed))
	require.True(t, errors.Is(ErrInvalidArgument, poll.ErrInvalidArgument))
}
