package timer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/poll"
)

var modes = []struct {
	name string
	opts poll.PollOpt
}{
	{"Edge", poll.Edge}, {"Level", poll.Level}, {"Oneshot", poll.Oneshot}, {"EdgeOneshot", poll.Edge | poll.Oneshot},
}

// A Timer is reported as each trigger mode says: Level while values wait,
// Edge once each time it becomes readable, Oneshot once until Reregister.
func TestTimerModes(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			p := newPoll(t)
			tm := newTimer[int](t, p, m.opts)
			requireNoEvent(t, p)
			_, err := tm.Set(time.Millisecond, 1)
			require.NoError(t, err)
			_, err = tm.Set(time.Millisecond, 2)
			require.NoError(t, err)
			waitEvent(t, p)
			// The second may expire a tick after the first: wait for it
			// (it makes no new edge, the Timer being readable already).
			deadline := time.Now().Add(eventWait)
			for tm.Stats().Expired < 2 {
				require.True(t, time.Now().Before(deadline), "the second timeout never expired")
				pollOnce(t, p, time.Millisecond)
			}
			switch {
			case m.opts.IsOneshot():
				requireNoEvent(t, p)
				require.NoError(t, p.Reregister(tm, tok, poll.Readable, m.opts))
				require.True(t, pollOnce(t, p, 0), "Reregister with values waiting reports at once (rule 5)")
			case m.opts.IsLevel():
				require.True(t, pollOnce(t, p, 0), "level: reported while values wait")
			default:
				requireNoEvent(t, p) // edge: nothing new
			}
			require.Equal(t, []int{1, 2}, drain(tm))
			if m.opts.IsOneshot() {
				require.NoError(t, p.Reregister(tm, tok, poll.Readable, m.opts))
			}
			requireNoEvent(t, p)

			// A new expiry after the Timer was emptied is a new edge.
			_, err = tm.Set(time.Millisecond, 3)
			require.NoError(t, err)
			waitEvent(t, p)
			require.Equal(t, []int{3}, drain(tm))
			if !m.opts.IsLevel() || m.opts.IsOneshot() {
				requireNoEvent(t, p)
			}
		})
	}
}

func drain[T any](tm *Timer[T]) []T {
	var out []T
	for v := range tm.Drain() {
		out = append(out, v)
	}
	return out
}

// Timeouts keep expiring while the Timer is deregistered; registering it
// again reports the ones that did, at once (rule 5). Deregister discards
// the pending notification (rule 7).
func TestTimerDeregisterAndRegisterAgain(t *testing.T) {
	p := newPoll(t)
	tm := newTimer[string](t, p, poll.Edge)
	_, err := tm.Set(time.Millisecond, "expired while away")
	require.NoError(t, err)
	require.NoError(t, p.Deregister(tm))
	// Wait until it has expired, by a Registration's delay on the same Poll.
	reg, set := poll.NewRegistration()
	defer reg.Close()
	require.NoError(t, p.Register(reg, 1, poll.Readable, poll.Edge))
	require.NoError(t, set.DelayReadiness(poll.Readable, 20*time.Millisecond))
	ev := poll.NewEvents(4)
	deadline := time.Now().Add(eventWait)
	for tm.Stats().Expired == 0 {
		require.True(t, time.Now().Before(deadline), "the timeout never expired")
		_, err := p.Poll(ev, time.Until(deadline))
		require.NoError(t, err)
		for e := range ev.All() {
			require.Equal(t, poll.Token(1), e.Token, "a deregistered Timer was reported")
		}
	}
	require.NoError(t, p.Register(tm, tok, poll.Readable, poll.Edge))
	require.True(t, pollOnce(t, p, 0), "registered while readable: reported by the next Poll")
	require.Equal(t, []string{"expired while away"}, drain(tm))
}

// Close mid-stream: values are dropped, Set answers ErrClosed, nothing is
// reported any more, and the Poll keeps working.
func TestTimerCloseMidStream(t *testing.T) {
	p := newPoll(t)
	tm := newTimer[int](t, p, poll.Level)
	for i := range 100 {
		_, err := tm.Set(time.Duration(i%5)*time.Millisecond, i)
		require.NoError(t, err)
	}
	waitEvent(t, p)
	v, ok := tm.TryRecv()
	require.True(t, ok)
	require.Zero(t, v)
	st := tm.Stats()
	require.NoError(t, tm.Close())
	requireNoEvent(t, p)
	_, err := tm.Set(time.Millisecond, 1)
	require.ErrorIs(t, err, ErrClosed)
	_, ok = tm.TryRecv()
	require.False(t, ok)
	require.Zero(t, tm.Len())
	require.ErrorIs(t, tm.Close(), ErrClosed)
	// The closed Timer's pending timeouts left the wheel with Close.
	require.Zero(t, p.Stats().TimersPending, "timeouts of a closed Timer still in the wheel")
	require.Equal(t, Stats{Fired: st.Fired, Cancelled: uint64(st.Pending)}, tm.Stats(), "Close counts the timeouts it dropped as cancelled")
}
