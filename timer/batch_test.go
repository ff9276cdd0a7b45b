package timer

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/poll"
)

// Resolution batching (issue 22, hole 4): what Tick is for. Deadlines are
// rounded up to a multiple of the Timer's resolution, counted from the
// Poll's creation, so timeouts set close together, inside one window of
// the resolution, all expire at the window's end: in one wake-up of the
// Poll (one Poll call reports the Timer) and one Drain. A rounding that
// splits such a batch, or pushes it a whole tick past the window's end,
// or fires it before the window's end, fails.
//
// The arithmetic is exact: the Poll's origin lies between the clock
// readings around poll.NewWithConfig, each deadline between the readings
// around its Set plus its duration, and a window of resolution r ends at
// origin + k*r. Where those intervals do not put the whole batch in one
// window (the test goroutine was descheduled between two Sets, across a
// window's end), the attempt decides nothing and is made again; likewise
// an attempt whose Poll call came too late to tell a tick of lateness.

// batchCases are the geometries: a resolution of one wheel tick; a coarse
// one inside the first level; one whose windows are placed in upper levels
// and cascade down (4 slots of 1ms: a level-0 run is 4ms); and one that is
// not a multiple of the wheel's tick, whose windows are whole ticks (3ms
// on a 2ms wheel: 4ms).
var batchCases = []struct {
	name  string
	tick  time.Duration
	slots int
	res   time.Duration
}{
	{"res=tick", time.Millisecond, 64, 0},
	{"res=20ms", time.Millisecond, 64, 20 * time.Millisecond},
	{"res=16ms/slots=4", time.Millisecond, 4, 16 * time.Millisecond},
	{"res=3ms/tick=2ms", 2 * time.Millisecond, 16, 3 * time.Millisecond},
}

// Each case and mode makes attempts until batchWant of them decided
// something, at most batchAttempts; at least one must decide.
const (
	batchWant     = 3
	batchAttempts = 30
)

func TestTimerTickBatches(t *testing.T) {
	for _, c := range batchCases {
		for _, mode := range []string{"asleep", "away"} {
			t.Run(c.name+"/"+mode, func(t *testing.T) {
				win := window(c.tick, c.res)
				p, o0, o1 := newPollOrigin(t, poll.Config{WheelTick: c.tick, WheelSlots: c.slots}, win/4)
				b := &batch{p: p, o0: o0, o1: o1, tick: c.tick, res: c.res, win: win, away: mode == "away"}
				decided := 0
				for i := 0; i < batchAttempts && decided < batchWant; i++ {
					if b.attempt(t, rand.IntN(9)+2) {
						decided++
					}
				}
				t.Logf("%d of %d attempts decisive (window %v, origin known to %v)", decided, b.tries, b.win, o1.Sub(o0))
				require.Positive(t, decided, "no attempt could decide: every batch straddled a window's end or was polled late")
			})
		}
	}
}

// newPollOrigin opens a Poll with c, closed at cleanup, and returns the
// clock readings around its creation, between which its wheel's origin
// lies. It opens it again while they are more than within apart (the
// goroutine was descheduled meanwhile), a few times at most: a window no
// wider than the uncertainty of its end decides nothing.
func newPollOrigin(t *testing.T, c poll.Config, within time.Duration) (p *poll.Poll, o0, o1 time.Time) {
	t.Helper()
	for try := 0; ; try++ {
		var err error
		o0 = time.Now()
		p, err = poll.NewWithConfig(c)
		o1 = time.Now()
		require.NoError(t, err)
		if o1.Sub(o0) <= within || try == 20 {
			t.Cleanup(func() { _ = p.Close() })
			return p, o0, o1
		}
		require.NoError(t, p.Close())
	}
}

// window is the length of the windows a Timer of resolution res fires at
// the end of, on a wheel of tick tick: res rounded up to whole ticks.
func window(tick, res time.Duration) time.Duration {
	return max(tick, (res+tick-1)/tick*tick)
}

// batch is one Poll on which attempts are made.
type batch struct {
	p         *poll.Poll
	o0, o1    time.Time // the Poll's origin is between them
	tick, res time.Duration
	win       time.Duration
	away      bool // the consumer is away when the window ends, else asleep in Poll
	tries     int
}

// attempt sets n timeouts aimed at one place in a window two windows
// ahead, and checks that they fire together at the window's end. It
// reports whether the attempt decided anything.
func (b *batch) attempt(t *testing.T, n int) bool {
	t.Helper()
	b.tries++
	tm, err := New[int](Tick(b.res))
	require.NoError(t, err)
	defer tm.Close()
	require.NoError(t, b.p.Register(tm, tok, poll.Readable, poll.Edge))

	// Aim at a drawn place in the window that ends k windows after the
	// origin, k two or three windows from now, a few µs apart, in
	// decreasing order of deadline for half the attempts.
	k := int64(time.Since(b.o0)/b.win) + 3
	aim := b.o0.Add(time.Duration(k-1)*b.win + time.Duration(rand.Int64N(int64(b.win))))
	step := time.Duration(rand.IntN(20)) * time.Microsecond
	if rand.IntN(2) == 0 {
		step = -step
	}
	type set struct{ lo, hi time.Time }
	sets := make([]set, n)
	for i := range n {
		lo := time.Now()
		d := max(aim.Add(time.Duration(i)*step).Sub(lo), 0)
		_, err := tm.Set(d, i)
		sets[i] = set{lo.Add(d), time.Now().Add(d)}
		require.NoError(t, err)
	}
	// The window each deadline is in, relative to the origin: the same
	// for the earliest reading and the latest, or this attempt decides
	// nothing.
	lo, hi := sets[0].lo, sets[0].hi
	for _, s := range sets {
		lo, hi = minTime(lo, s.lo), maxTime(hi, s.hi)
	}
	k = ceilDiv(lo.Sub(b.o1), b.win)
	if ceilDiv(hi.Sub(b.o0), b.win) != k {
		return false
	}
	endMin := b.o0.Add(time.Duration(k) * b.win) // the window's end: the earliest it may be
	endMax := b.o1.Add(time.Duration(k) * b.win) // and the latest
	what := fmt.Sprintf("%d timeouts with deadlines in [%v, %v] after the origin, window %v (resolution %v, tick %v)",
		n, lo.Sub(b.o1), hi.Sub(b.o0), b.win, b.res, b.tick)

	decided := true
	if b.away {
		// Just before the window's end: nothing has fired. (A call that
		// ended after the window's end may have fired it: then the
		// attempt decides nothing more.)
		reported := false
		if before := endMin.Add(-min(b.tick, b.win/4)); time.Now().Before(before) {
			waitUntil(before)
			reported = pollOnce(t, b.p, 0)
			if end := time.Now(); end.Before(endMin) {
				require.False(t, reported, "%s: reported %v before its window ended", what, endMin.Sub(end))
				require.Zero(t, tm.Stats().Fired, "%s: fired %v before its window ended", what, endMin.Sub(end))
			}
		}
		// From the window's end on: a call that does not block fires the
		// whole batch, first thing. If it started a tick after the end,
		// a batch pushed a tick late would have fired too.
		if !reported {
			waitUntil(endMax)
			start := time.Now()
			require.True(t, pollOnce(t, b.p, 0), "%s: not reported by a Poll call %v after its window ended", what, start.Sub(endMax))
			decided = start.Before(endMin.Add(b.tick))
		} else {
			decided = false
		}
	} else {
		// Asleep in Poll when the window ends: one call reports the
		// Timer, never before the window's end.
		require.True(t, pollOnce(t, b.p, eventWait), "%s: not reported within %v", what, eventWait)
		end := time.Now()
		require.False(t, end.Before(endMin), "%s: reported %v before its window ended", what, endMin.Sub(end))
	}
	got := drain(tm)
	require.Len(t, got, n, "%s: one Drain after the Timer was reported took %v: the batch was split", what, got)
	require.Equal(t, Stats{Fired: uint64(n)}, tm.Stats(), what)
	// In deadline order, where the readings tell it.
	pos := make([]int, n)
	for i, v := range got {
		pos[v] = i
	}
	for i := range n {
		for j := range n {
			if sets[i].hi.Before(sets[j].lo) {
				require.Less(t, pos[i], pos[j], "%s: value %d came out before value %d, whose deadline is earlier: %v", what, j, i, got)
			}
		}
	}
	require.NoError(t, b.p.Deregister(tm))
	return decided
}

// ceilDiv is ceil(a/b) for b > 0.
func ceilDiv(a, b time.Duration) int64 {
	q := int64(a / b)
	if a > 0 && a%b != 0 {
		q++
	}
	return q
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// waitUntil returns once the clock has passed at, as soon after as it
// can: it sleeps until spinLast before at, then yields in a loop, since a
// runtime timer may fire a millisecond late on a loaded machine. Here the
// passage of time is the input under test (a consumer that comes back at
// a given moment), not a way to order two goroutines.
func waitUntil(at time.Time) {
	for d := time.Until(at); d > 0; d = time.Until(at) {
		if d > spinLast {
			<-time.After(d - spinLast)
		} else {
			runtime.Gosched()
		}
	}
}

const spinLast = 500 * time.Microsecond
