package poll

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Regression tests for what a new user met first: nil and zero values that
// panicked or bound a Registration to an unusable Poll, interests and modes
// that were silently accepted or badly described, and a delay that made an
// idle Poll spin.

// Every method with an error result of a nil *Poll and of the zero Poll
// returns an error matching ErrInvalidArgument; the others return zero
// values. None panics, and nothing is bound to the unusable Poll.
func TestNilAndZeroPoll(t *testing.T) {
	for name, p := range map[string]*Poll{"nil": nil, "zero": {}} {
		t.Run(name, func(t *testing.T) {
			a, _ := socketPair(t)
			reg, set := NewRegistration()
			defer reg.Close()
			ev := NewEvents(4)
			calls := map[string]func() error{
				"Register(Fd)":           func() error { return p.Register(Fd(a), 1, Readable, Edge) },
				"Reregister(Fd)":         func() error { return p.Reregister(Fd(a), 1, Readable, Edge) },
				"Deregister(Fd)":         func() error { return p.Deregister(Fd(a)) },
				"Fd.Register":            func() error { return Fd(a).Register(p, 1, Readable, Edge) },
				"Fd.Reregister":          func() error { return Fd(a).Reregister(p, 1, Readable, Edge) },
				"Fd.Deregister":          func() error { return Fd(a).Deregister(p) },
				"Fd.Drained":             func() error { return Fd(a).Drained(p, Readable) },
				"Register(Registration)": func() error { return p.Register(reg, 1, Readable, Edge) },
				"Registration.Register":  func() error { return reg.Register(p, 1, Readable, Edge) },
				"Registration.Reregister": func() error {
					return reg.Reregister(p, 1, Readable, Edge)
				},
				"Registration.Deregister": func() error { return reg.Deregister(p) },
				"Poll":                    func() error { _, err := p.Poll(ev, 0); return err },
				"Poll(-1)":                func() error { _, err := p.Poll(ev, -1); return err },
				"Close":                   func() error { return p.Close() },
			}
			for what, call := range calls {
				var err error
				require.NotPanics(t, func() { err = call() }, what)
				require.ErrorIs(t, err, ErrInvalidArgument, what)
				require.Contains(t, err.Error(), "poll.New", what)
			}
			require.NotPanics(t, func() {
				require.Equal(t, Stats{}, p.Stats())
				require.Empty(t, p.Backend())
				require.True(t, p.Closed())
				require.False(t, p.edgeEmulated())
			})
			// The Registration is free: it registers with a real Poll.
			q, err := New()
			require.NoError(t, err)
			defer q.Close()
			require.NoError(t, q.Register(reg, 2, Readable, Edge))
			require.NoError(t, set.SetReadiness(Readable))
			requireEvent(t, q, ev, 2, Readable)
		})
	}
}

// The zero Events and a nil *Events read as empty; Poll refuses both.
func TestNilAndZeroEvents(t *testing.T) {
	p := newPollConfig(t, Config{})
	for name, ev := range map[string]*Events{"nil": nil, "zero": {}} {
		require.NotPanics(t, func() {
			require.Zero(t, ev.Len(), name)
			require.Zero(t, ev.Cap(), name)
			ev.Clear()
			for range ev.All() {
				t.Fatal("an empty Events yielded an event")
			}
			_, err := p.Poll(ev, 0)
			require.ErrorIs(t, err, ErrInvalidArgument, name)
		}, name)
	}
}

// An empty interest could never be reported: refused for descriptors and
// Registrations alike, with a message that says so.
func TestEmptyInterest(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		p := newPoll(t)
		a, _ := socketPair(t)
		reg, _ := NewRegistration()
		defer reg.Close()
		for _, e := range []Evented{Fd(a), reg} {
			err := p.Register(e, 1, 0, Edge)
			require.ErrorIs(t, err, ErrInvalidInterest)
			require.EqualError(t, err, "unipoll: invalid interest: empty, so the source could never be reported")
			require.NoError(t, p.Register(e, 1, Readable, Edge))
			require.ErrorIs(t, p.Reregister(e, 1, 0, Level), ErrInvalidInterest)
			require.NoError(t, p.Deregister(e))
		}
	})
}

// What a trigger mode prints, and what its refusal says.
func TestPollOptMessages(t *testing.T) {
	for opts, want := range map[PollOpt]string{
		0:                      "Level",
		Edge:                   "Edge",
		Level:                  "Level",
		Oneshot:                "Level|Oneshot",
		Edge | Oneshot:         "Edge|Oneshot",
		Edge | Level:           "Edge|Level",
		Edge | Level | Oneshot: "Edge|Level|Oneshot",
		0xF0:                   "0xf0",
		Edge | 0x10:            "Edge|0x10",
	} {
		require.Equal(t, want, opts.String(), "%#x", uint8(opts))
	}
	p := newPollConfig(t, Config{})
	reg, _ := NewRegistration()
	defer reg.Close()
	for opts, says := range map[PollOpt]string{
		Edge | Level: "Edge and Level together",
		0xF0:         "unknown bits 0xf0",
		Level | 0x80: "unknown bits 0x80",
	} {
		err := p.Register(reg, 1, Readable, opts)
		require.ErrorIs(t, err, ErrInvalidOpts)
		require.Contains(t, err.Error(), says)
	}
	// The zero PollOpt is Level, as documented.
	require.NoError(t, p.Register(reg, 1, Readable, 0))
}

// A delay of centuries on a coarse wheel must not wrap the Poll's timeout
// to zero: an idle Poll(300ms) with it pending blocks, it does not spin.
func TestWheelHugeDelayDoesNotSpin(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		p := newPollConfig(t, Config{Backend: newPoll(t).Backend(), WheelTick: time.Hour})
		reg, set := NewRegistration()
		defer reg.Close()
		require.NoError(t, p.Register(reg, 1, Readable, Edge))
		for _, d := range []time.Duration{1<<63 - 1, 200 * 365 * 24 * time.Hour} {
			require.NoError(t, set.DelayReadiness(Readable, d))
			before := p.Stats()
			start := time.Now()
			n, err := p.Poll(NewEvents(4), 300*time.Millisecond)
			require.NoError(t, err)
			require.Zero(t, n)
			require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
			after := p.Stats()
			require.LessOrEqual(t, after.KernelWaits-before.KernelWaits, uint64(3), "delay %v: the Poll spun", d)
		}
	})
}

// An error in Drained names what is wrong.
func TestFdDrainedErrors(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		p := newPoll(t)
		a, _ := socketPair(t)
		if !p.edgeEmulated() {
			// Free where edges are native: it looks at nothing.
			require.NoError(t, Fd(a).Drained(p, Readable))
			return
		}
		require.ErrorIs(t, Fd(a).Drained(p, Readable), ErrNotRegistered)
		require.ErrorIs(t, Fd(-1).Drained(p, Readable), ErrInvalidFd)
		require.NoError(t, p.Register(Fd(a), 1, Readable, Edge))
		require.ErrorIs(t, Fd(a).Drained(p, 0), ErrInvalidArgument)
		require.NoError(t, Fd(a).Drained(p, Readable|Writable))
		require.NoError(t, p.Close())
		err := Fd(a).Drained(p, Readable)
		require.ErrorIs(t, err, ErrClosed)
		require.False(t, errors.Is(err, unix.EBADF))
	})
}
