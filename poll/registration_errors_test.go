package poll

// The error values of every Registration operation (see
// registration_test.go for the contract).

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRegistrationErrors checks every error a Registration operation
// returns, matched with errors.Is.
func TestRegistrationErrors(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		t.Run("RegisteredElsewhere", func(t *testing.T) {
			p1, p2 := newPoll(t), newPoll(t)
			r, s := newRegistered(t, p1, 1, Readable, Edge)
			require.ErrorIs(t, p2.Register(r, 1, Readable, Edge), ErrRegisteredElsewhere)
			require.ErrorIs(t, p2.Reregister(r, 1, Readable, Edge), ErrRegisteredElsewhere)
			require.ErrorIs(t, p2.Deregister(r), ErrRegisteredElsewhere)
			// Still bound to p1 after Deregister.
			require.NoError(t, p1.Deregister(r))
			require.ErrorIs(t, p2.Register(r, 1, Readable, Edge), ErrRegisteredElsewhere)
			// The failed attempts did not disturb p1 or p2.
			require.NoError(t, p1.Register(r, 2, Readable, Edge))
			require.NoError(t, s.SetReadiness(Readable))
			ev := NewEvents(4)
			requireNoEvents(t, p2, ev)
			requireOnly(t, p1, ev, 2, Readable)
		})
		t.Run("AlreadyRegistered", func(t *testing.T) {
			p := newPoll(t)
			r, s := newRegistered(t, p, 1, Readable, Level)
			require.ErrorIs(t, p.Register(r, 2, Writable, Edge), ErrAlreadyRegistered)
			// The failed Register changed nothing: token 1, Readable, Level.
			require.NoError(t, s.SetReadiness(Readable|Writable))
			ev := NewEvents(4)
			requireOnly(t, p, ev, 1, Readable)
			requireOnly(t, p, ev, 1, Readable)
		})
		t.Run("NotRegistered", func(t *testing.T) {
			p := newPoll(t)
			r, s := newUnregistered(t)
			require.ErrorIs(t, p.Deregister(r), ErrNotRegistered)
			require.ErrorIs(t, p.Reregister(r, 1, Readable, Edge), ErrNotRegistered)
			require.ErrorIs(t, s.DelayReadiness(Readable, time.Millisecond), ErrNotRegistered)
			require.NoError(t, p.Register(r, 1, Readable, Edge))
			require.NoError(t, p.Deregister(r))
			require.ErrorIs(t, p.Deregister(r), ErrNotRegistered)
			require.ErrorIs(t, p.Reregister(r, 1, Readable, Edge), ErrNotRegistered)
		})
		t.Run("InvalidArguments", func(t *testing.T) {
			p := newPoll(t)
			r, s := newUnregistered(t)
			bad := Ready(1 << 12)
			require.ErrorIs(t, p.Register(r, 1, bad, Edge), ErrInvalidInterest)
			require.ErrorIs(t, p.Register(r, 1, Readable, Edge|Level), ErrInvalidOpts)
			require.ErrorIs(t, p.Register(r, 1, Readable, PollOpt(1<<6)), ErrInvalidOpts)
			require.ErrorIs(t, p.Register(r, ReservedToken, Readable, Edge), ErrReservedToken)
			require.ErrorIs(t, p.Register(nil, 1, Readable, Edge), ErrInvalidArgument)
			// Calling the Evented methods directly validates too.
			require.ErrorIs(t, r.Register(p, 1, bad, Edge), ErrInvalidInterest)
			require.ErrorIs(t, s.SetReadiness(bad), ErrInvalidArgument)
			require.ErrorIs(t, s.SetReadiness(Readable|bad), ErrInvalidArgument)
			require.ErrorIs(t, s.UnsetReadiness(bad), ErrInvalidArgument)
			require.ErrorIs(t, s.DelayReadiness(bad, time.Millisecond), ErrInvalidArgument)
			require.Equal(t, Ready(0), s.Readiness(), "a refused SetReadiness must not set anything")
			// None of the refused calls bound r to p.
			p2 := newPoll(t)
			require.NoError(t, p2.Register(r, 1, Readable, Edge))
			require.ErrorIs(t, s.DelayReadiness(Readable, -time.Millisecond), ErrInvalidArgument)
			require.ErrorIs(t, p2.Reregister(r, 1, bad, Edge), ErrInvalidInterest)
			require.ErrorIs(t, p2.Reregister(r, ReservedToken, Readable, Edge), ErrReservedToken)
			_, err := p2.Poll(nil, 0)
			require.ErrorIs(t, err, ErrInvalidArgument)
			// The refused Reregister changed nothing.
			require.NoError(t, s.SetReadiness(Readable))
			requireOnly(t, p2, NewEvents(4), 1, Readable)
		})
		t.Run("AfterPollClose", func(t *testing.T) {
			p := newPoll(t)
			ev := NewEvents(4)
			// One registration that is not queued when the Poll closes,
			// one that is (an always-ready level one, queued after its
			// report), one bound but deregistered.
			rIdle, sIdle := newRegistered(t, p, 1, Readable, Edge)
			rQueued, sQueued := newRegistered(t, p, 2, Readable, Level)
			rDereg, sDereg := newRegistered(t, p, 3, Readable, Edge)
			require.NoError(t, sQueued.SetReadiness(Readable))
			requireOnly(t, p, ev, 2, Readable)
			require.NoError(t, p.Deregister(rDereg))
			rNew, sNew := newUnregistered(t)

			require.NoError(t, p.Close())
			require.ErrorIs(t, p.Close(), ErrClosed)
			_, err := p.Poll(ev, 0)
			require.ErrorIs(t, err, ErrClosed)
			_, err = p.Poll(ev, -1)
			require.ErrorIs(t, err, ErrClosed)

			for i, c := range []struct {
				r *Registration
				s *SetReadiness
			}{{rIdle, sIdle}, {rQueued, sQueued}, {rDereg, sDereg}} {
				require.ErrorIs(t, c.s.SetReadiness(Readable), ErrClosed, "registration %d: SetReadiness after Poll.Close", i)
				require.ErrorIs(t, c.s.SetReadiness(Writable), ErrClosed, "registration %d: SetReadiness after Poll.Close", i)
				require.ErrorIs(t, c.s.DelayReadiness(Readable, time.Millisecond), ErrClosed, "registration %d: DelayReadiness after Poll.Close", i)
				require.ErrorIs(t, p.Reregister(c.r, 9, Readable, Edge), ErrClosed, "registration %d: Reregister after Poll.Close", i)
				require.ErrorIs(t, p.Deregister(c.r), ErrClosed, "registration %d: Deregister after Poll.Close", i)
				require.ErrorIs(t, p.Register(c.r, 9, Readable, Edge), ErrClosed, "registration %d: Register after Poll.Close", i)
			}
			require.ErrorIs(t, p.Register(rNew, 4, Readable, Edge), ErrClosed)
			// A Registration never registered can still be used elsewhere:
			// the refused Register did not bind it.
			p2 := newPoll(t)
			require.NoError(t, p2.Register(rNew, 4, Readable, Edge))
			require.NoError(t, sNew.SetReadiness(Readable))
			requireOnly(t, p2, ev, 4, Readable)
		})
	})
}
