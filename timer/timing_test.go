package timer

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/poll"
)

// Never early, and at most one tick late (plus scheduling noise) at the
// 99th percentile. Each value carries its own deadline, and is checked
// against the clock the moment it is taken.
func TestTimerAccuracy(t *testing.T) {
	for _, tick := range []time.Duration{0, 5 * time.Millisecond} {
		t.Run("tick="+tick.String(), func(t *testing.T) {
			p := newPoll(t)
			tm := newTimer[time.Time](t, p, poll.Edge, Tick(tick))
			resolution := max(tick, time.Millisecond)
			const n = 200
			for range n {
				d := time.Duration(rand.IntN(50_000)) * time.Microsecond
				at := time.Now().Add(d)
				_, err := tm.Set(d, at)
				require.NoError(t, err)
			}
			var lates []time.Duration
			deadline := time.Now().Add(eventWait)
			for len(lates) < n {
				require.True(t, time.Now().Before(deadline), "%d of %d timeouts expired", len(lates), n)
				if !pollOnce(t, p, time.Until(deadline)) {
					continue
				}
				for at := range tm.Drain() {
					now := time.Now()
					require.False(t, now.Before(at), "a timeout expired %v early", at.Sub(now))
					lates = append(lates, now.Sub(at))
				}
			}
			slices.Sort(lates)
			p99 := lates[len(lates)*99/100]
			t.Logf("tick %v: lateness median %v, p99 %v, max %v", resolution, lates[len(lates)/2], p99, lates[len(lates)-1])
			require.LessOrEqual(t, p99, resolution+lateSlack, "p99 lateness")
		})
	}
}

// A million timeouts set at once, with deadlines spread over half a
// second: every one expires, none early, none twice, and the wheel is
// empty afterwards.
func TestTimerMillion(t *testing.T) {
	n := 1_000_000
	if raceEnabled {
		n = 200_000 // the race detector makes each Set about ten times slower
	}
	p := newPoll(t)
	tm := newTimer[int32](t, p, poll.Edge)
	due := make([]time.Time, n)
	for i := range n {
		d := time.Duration(rand.IntN(500)) * time.Millisecond
		due[i] = time.Now().Add(d)
		_, err := tm.Set(d, int32(i))
		require.NoError(t, err)
	}
	require.Equal(t, n, tm.Len())
	seen := make([]bool, n)
	got := 0
	deadline := time.Now().Add(30 * time.Second)
	for got < n {
		require.True(t, time.Now().Before(deadline), "%d of %d timeouts expired", got, n)
		if !pollOnce(t, p, time.Second) {
			continue
		}
		now := time.Now()
		for i := range tm.Drain() {
			require.False(t, seen[i], "timeout %d expired twice", i)
			require.False(t, now.Before(due[i]), "timeout %d expired early", i)
			seen[i] = true
			got++
		}
	}
	require.Zero(t, tm.Len())
	st := tm.Stats()
	require.Equal(t, uint64(n), st.Fired)
	require.Zero(t, st.Pending)
	require.Zero(t, p.Stats().TimersPending)
}

// Values that expire in the same tick come out in deadline order, not in
// the order they were set: timeouts set in decreasing order of deadline,
// 1ms apart, inside one or two 100ms ticks of the Timer's resolution. The
// test brackets each Set with the clock, so a Set delayed by the scheduler
// widens the window its deadline may be in instead of failing the test.
func TestTimerSameTickDeadlineOrder(t *testing.T) {
	p := newPoll(t)
	tm := newTimer[int](t, p, poll.Edge, Tick(100*time.Millisecond))
	const n = 40
	type window struct{ lo, hi time.Time }
	deadlines := make([]window, n)
	for i := range n {
		d := time.Duration(n-i) * time.Millisecond
		lo := time.Now()
		_, err := tm.Set(d, i)
		require.NoError(t, err)
		deadlines[i] = window{lo.Add(d), time.Now().Add(d)}
	}
	var got []int
	deadline := time.Now().Add(eventWait)
	for len(got) < n {
		require.True(t, time.Now().Before(deadline), "%d of %d expired", len(got), n)
		if pollOnce(t, p, time.Until(deadline)) {
			got = append(got, drain(tm)...)
		}
	}
	for k := 1; k < n; k++ {
		a, b := deadlines[got[k-1]], deadlines[got[k]]
		require.False(t, a.lo.After(b.hi), "value %d came out before value %d, whose deadline is earlier", got[k-1], got[k])
	}
	// The check means something only where windows do not overlap: most
	// of them, unless the scheduler stalled the test between Sets.
	decided := 0
	for i := 1; i < n; i++ {
		if deadlines[i].hi.Before(deadlines[i-1].lo) {
			decided++
		}
	}
	require.GreaterOrEqual(t, decided, n/2, "too few Sets were quick enough for their order to be known")
}
