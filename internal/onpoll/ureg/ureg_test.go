package ureg

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/unipoll/unipoll/internal/onpoll/polltest"
	"github.com/unipoll/unipoll/poll"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func reported(t *testing.T, p *poll.Poll, tok poll.Token) bool {
	t.Helper()
	ev := poll.NewEvents(4)
	_, err := p.Poll(ev, 20*time.Millisecond)
	require.NoError(t, err)
	for e := range ev.All() {
		if e.Token == tok {
			return true
		}
	}
	return false
}

// A Reg is on one live Poll at a time; deregistered, or once its Poll is
// closed, it moves to another and carries its readiness (rule 5 there).
func TestMove(t *testing.T) {
	r := New()
	p1, p2 := polltest.New(t), polltest.New(t)
	require.NoError(t, r.Register(p1, 1, poll.Readable, poll.Edge))
	require.ErrorIs(t, r.Register(p2, 2, poll.Readable, poll.Edge), poll.ErrRegisteredElsewhere)
	require.ErrorIs(t, r.Reregister(p2, 2, poll.Readable, poll.Edge), poll.ErrRegisteredElsewhere)
	require.ErrorIs(t, r.Deregister(p2), poll.ErrRegisteredElsewhere)
	r.Set(poll.Readable)
	require.True(t, reported(t, p1, 1))

	require.NoError(t, r.Deregister(p1))
	require.ErrorIs(t, r.Deregister(p1), poll.ErrNotRegistered)
	require.NoError(t, r.Register(p2, 2, poll.Readable, poll.Edge))
	require.True(t, reported(t, p2, 2), "readiness not carried to the new Poll")
	require.False(t, reported(t, p1, 1))

	require.NoError(t, p2.Close())
	p3 := polltest.New(t)
	require.NoError(t, r.Register(p3, 3, poll.Readable, poll.Level))
	require.True(t, reported(t, p3, 3))
	r.Unset(poll.Readable)
	require.False(t, reported(t, p3, 3))

	require.NoError(t, r.Close())
	require.ErrorIs(t, r.Close(), poll.ErrClosed)
	require.ErrorIs(t, r.Register(p3, 4, poll.Readable, poll.Edge), poll.ErrClosed)
	r.Set(poll.Readable) // harmless
	require.False(t, reported(t, p3, 3))
}

func TestChecks(t *testing.T) {
	p := polltest.New(t)
	require.ErrorIs(t, CheckRegister(nil, nil), poll.ErrInvalidArgument)
	require.ErrorIs(t, CheckOn(nil, nil), poll.ErrInvalidArgument)
	require.NoError(t, CheckRegister(nil, p))
	require.NoError(t, CheckOn(p, p))
	require.ErrorIs(t, CheckOn(nil, p), poll.ErrNotRegistered)
	closed, err := poll.New()
	require.NoError(t, err)
	require.NoError(t, closed.Close())
	require.NoError(t, CheckRegister(closed, p), "a closed Poll holds nothing")
	require.ErrorIs(t, CheckOn(nil, closed), poll.ErrClosed)
}
