package poll

// Delayed readiness (the timing wheel), rule 10: a delay fires no earlier
// than asked and at most one wheel tick late (plus scheduling noise); a new
// DelayReadiness replaces the pending one; UnsetReadiness and
// Registration.Close cancel it; an idle Poll neither writes its waker nor
// wakes up by itself.
//
// "Never early" is measured from just before DelayReadiness to the return
// of the Poll call that reports the event: if the event was due any earlier
// the Poll could have returned earlier, so a correct wheel can never fail
// it. "Late" allows one tick plus lateSlack for a noisy 2-core machine
// running the race detector; the observed lateness is logged.

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/testsupport"
)

// lateSlack is the scheduling noise allowed on top of one wheel tick: the
// suite runs under -race on a 2-core machine. On a machine that is not
// overloaded it is 100ms: far below what a wheel that misses a wake-up
// costs (waitDelayed then sees the whole eventWait), and below one turn
// (160 ms) of the first level of the 10 ms wheel, so an entry that fires a
// turn late still fails. On a machine with more runnable threads than
// cores it grows with the load average: a goroutine that waits for a core
// is not the wheel's lateness.
var lateSlack = 100 * time.Millisecond * time.Duration(max(1, testsupport.LoadPerCPU()))

// wheelConfigs are the wheel geometries the delay tests run with. The
// second has a 16 ms rotation, so that 20 ms and 50 ms delays wrap around
// the wheel; the third has a coarse tick.
var wheelConfigs = []struct {
	name   string
	tick   time.Duration
	slots  int
	delays []time.Duration
}{
	{"Default", DefaultWheelTick, DefaultWheelSlots, []time.Duration{time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond, 100 * time.Millisecond}},
	{"Tick1msSlots16", time.Millisecond, 16, []time.Duration{time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond}},
	{"Tick10msSlots16", 10 * time.Millisecond, 16, []time.Duration{time.Millisecond, 25 * time.Millisecond, 200 * time.Millisecond}},
}

// forEachWheel runs fn for every backend and wheel configuration with a
// Poll made for it.
func forEachWheel(t *testing.T, fn func(t *testing.T, p *Poll, tick time.Duration, delays []time.Duration)) {
	for _, b := range backends(t) {
		t.Run(b, func(t *testing.T) {
			for _, c := range wheelConfigs {
				t.Run(c.name, func(t *testing.T) {
					p := newPollConfig(t, Config{Backend: b, WheelTick: c.tick, WheelSlots: c.slots})
					fn(t, p, c.tick, c.delays)
				})
			}
		})
	}
}

// checkDelay asserts that an event observed elapsed after its
// DelayReadiness call for delay d is neither early nor too late, and logs
// the lateness.
func checkDelay(t testing.TB, what string, d, elapsed, tick time.Duration) {
	t.Helper()
	require.GreaterOrEqual(t, elapsed, d, "%s: delay %v fired early, after %v", what, d, elapsed)
	late := elapsed - d
	t.Logf("%s: delay %v fired after %v (late by %v; tick %v)", what, d, elapsed, late, tick)
	require.LessOrEqual(t, late, tick+lateSlack, "%s: delay %v fired %v late, allowed one tick (%v) + %v", what, d, late, tick, lateSlack)
}

// waitDelayed polls until tok is reported and returns how long after start
// the reporting Poll call returned, and the readiness reported. Any other
// event fails the test. Each Poll call waits as long as the test may (not
// a short timeout in a loop): the Poll's own timeout must be what wakes it
// at the due time, and a wheel that fails to wake it shows as seconds late.
func waitDelayed(t testing.TB, p *Poll, ev *Events, tok Token, start time.Time) (time.Duration, Ready) {
	t.Helper()
	deadline := start.Add(eventWait)
	for {
		left := time.Until(deadline)
		require.Positive(t, left, "token %d: delayed readiness not reported within %v", tok, eventWait)
		evs := pollEvents(t, p, ev, left)
		if len(evs) > 0 {
			el := time.Since(start)
			require.Equal(t, []Event{{tok, evs[0].Ready}}, evs, "unexpected events")
			return el, evs[0].Ready
		}
	}
}

func TestWheelNeverEarly(t *testing.T) {
	forEachWheel(t, func(t *testing.T, p *Poll, tick time.Duration, delays []time.Duration) {
		ev := NewEvents(8)
		for _, m := range modes {
			r, s := newRegistered(t, p, 1, Readable, m.opts)
			for _, d := range delays {
				start := time.Now()
				require.NoError(t, s.DelayReadiness(Readable, d))
				el, rd := waitDelayed(t, p, ev, 1, start)
				require.Equal(t, Readable, rd)
				checkDelay(t, m.name, d, el, tick)
				require.NoError(t, s.UnsetReadiness(Readable))
				if m.opts.IsOneshot() {
					require.NoError(t, p.Reregister(r, 1, Readable, m.opts))
				}
				require.Empty(t, pollEvents(t, p, ev, 0))
			}
			require.NoError(t, r.Close())
		}
	})
}

// TestWheelDelayFromOtherGoroutine: DelayReadiness from another goroutine
// while Poll sleeps with a negative timeout, first with nothing else
// delayed, then with a longer delay pending, must wake the Poll in time:
// the Poll computed its sleep without the new entry.
func TestWheelDelayFromOtherGoroutine(t *testing.T) {
	forEachWheel(t, func(t *testing.T, p *Poll, tick time.Duration, _ []time.Duration) {
		ev := NewEvents(8)
		_, long := newRegistered(t, p, 1, Readable, Edge)
		_, short := newRegistered(t, p, 2, Readable, Edge)
		for i, longDelay := range []time.Duration{0, time.Hour} {
			if longDelay > 0 {
				require.NoError(t, long.DelayReadiness(Readable, longDelay))
			}
			ch := pollAsync(p, ev, -1)
			waitAsleep(t, p)
			const d = 30 * time.Millisecond
			start := time.Now()
			require.NoError(t, short.DelayReadiness(Readable, d))
			res := awaitPoll(t, p, ch, fmt.Sprintf("case %d", i))
			el := time.Since(start)
			require.NoError(t, res.err)
			require.Equal(t, []Event{{2, Readable}}, res.evs)
			checkDelay(t, fmt.Sprintf("asleep, long delay %v pending", longDelay), d, el, tick)
		}
		// The hour-long delay is still pending and does not fire.
		require.Equal(t, int64(1), p.wheel.Pending())
		require.Empty(t, pollEvents(t, p, ev, noEventWait))
	})
}

// TestWheelReplace: a second DelayReadiness replaces the first, sooner or
// later, and with different readiness.
func TestWheelReplace(t *testing.T) {
	forEachWheel(t, func(t *testing.T, p *Poll, tick time.Duration, _ []time.Duration) {
		ev := NewEvents(8)
		_, s := newRegistered(t, p, 1, Readable|Writable, Edge)

		// Sooner: 300 ms replaced by 20 ms.
		require.NoError(t, s.DelayReadiness(Readable, 300*time.Millisecond))
		start := time.Now()
		require.NoError(t, s.DelayReadiness(Readable, 20*time.Millisecond))
		el, r := waitDelayed(t, p, ev, 1, start)
		require.Equal(t, Readable, r)
		checkDelay(t, "replaced by a shorter delay", 20*time.Millisecond, el, tick)
		require.Zero(t, p.wheel.Pending(), "the replaced 300 ms delay is still in the wheel")
		require.NoError(t, s.UnsetReadiness(Readable))

		// Later: 20 ms replaced by 80 ms. Nothing at 20 ms.
		require.NoError(t, s.DelayReadiness(Readable, 20*time.Millisecond))
		start = time.Now()
		require.NoError(t, s.DelayReadiness(Readable, 80*time.Millisecond))
		el, r = waitDelayed(t, p, ev, 1, start)
		require.Equal(t, Readable, r)
		checkDelay(t, "replaced by a longer delay", 80*time.Millisecond, el, tick)
		require.NoError(t, s.UnsetReadiness(Readable))

		// Other readiness: Readable in 20 ms replaced by Writable in 60 ms.
		// Readable is never set.
		require.NoError(t, s.DelayReadiness(Readable, 20*time.Millisecond))
		start = time.Now()
		require.NoError(t, s.DelayReadiness(Writable, 60*time.Millisecond))
		el, r = waitDelayed(t, p, ev, 1, start)
		require.Equal(t, Writable, r, "the replaced Readable delay fired")
		require.Equal(t, Writable, s.Readiness())
		checkDelay(t, "replaced by other readiness", 60*time.Millisecond, el, tick)
		require.Empty(t, pollEvents(t, p, ev, 40*time.Millisecond))
		require.Equal(t, Writable, s.Readiness())
		require.NoError(t, s.UnsetReadiness(Writable))

		// A zero delay is SetReadiness.
		require.NoError(t, s.DelayReadiness(Readable, 0))
		requireOnly(t, p, ev, 1, Readable)
	})
}

// TestWheelCancel: UnsetReadiness of the delayed bits and Registration.Close
// cancel a pending delay: no event, no entry left, and the Poll, with
// nothing left to wait for, makes one select and no timed wake-up.
func TestWheelCancel(t *testing.T) {
	forEachWheel(t, func(t *testing.T, p *Poll, tick time.Duration, _ []time.Duration) {
		ev := NewEvents(8)
		r, s := newRegistered(t, p, 1, Readable|Writable, Edge)

		requireIdle := func(what string) {
			t.Helper()
			require.Zero(t, p.wheel.Pending(), "%s: entry left in the wheel", what)
			before := p.Stats()
			require.Empty(t, pollEvents(t, p, ev, 80*time.Millisecond), what)
			after := p.Stats()
			require.Zero(t, after.TimedWakeups-before.TimedWakeups, "%s: timed wake-up with nothing delayed", what)
			require.Equal(t, uint64(1), after.Selects-before.Selects, "%s: selects in one idle Poll call", what)
			require.Zero(t, after.WakerWrites-before.WakerWrites, "%s: waker writes", what)
		}

		// Cancel by UnsetReadiness.
		require.NoError(t, s.DelayReadiness(Readable, 20*time.Millisecond))
		require.NoError(t, s.UnsetReadiness(Readable))
		requireIdle("UnsetReadiness")
		require.Equal(t, Ready(0), s.Readiness())

		// Unsetting some of the delayed bits cancels only those.
		start := time.Now()
		require.NoError(t, s.DelayReadiness(Readable|Writable, 20*time.Millisecond))
		require.NoError(t, s.UnsetReadiness(Writable))
		el, rd := waitDelayed(t, p, ev, 1, start)
		require.Equal(t, Readable, rd)
		checkDelay(t, "partly unset", 20*time.Millisecond, el, tick)
		require.NoError(t, s.UnsetReadiness(Readable))

		// Unsetting bits that are not delayed keeps the delay.
		start = time.Now()
		require.NoError(t, s.DelayReadiness(Writable, 20*time.Millisecond))
		require.NoError(t, s.UnsetReadiness(Readable|Hup))
		el, rd = waitDelayed(t, p, ev, 1, start)
		require.Equal(t, Writable, rd)
		checkDelay(t, "other bits unset", 20*time.Millisecond, el, tick)
		require.NoError(t, s.UnsetReadiness(Writable))
		requireIdle("after a delay fired")

		// Cancel by Close.
		require.NoError(t, s.DelayReadiness(Readable, 20*time.Millisecond))
		require.NoError(t, r.Close())
		requireIdle("Registration.Close")
	})
}

// TestWheelIdle: a Poll with nothing registered, or nothing pending, sleeps
// through its whole timeout in one select, with no waker write and no
// timed wake-up.
func TestWheelIdle(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		check := func(p *Poll, what string) {
			t.Helper()
			before := p.Stats()
			ev := NewEvents(8)
			start := time.Now()
			n, err := p.Poll(ev, 100*time.Millisecond)
			el := time.Since(start)
			require.NoError(t, err)
			require.Zero(t, n, what)
			require.GreaterOrEqual(t, el, 100*time.Millisecond, "%s: Poll returned before its timeout", what)
			d := p.Stats()
			d.Polls -= before.Polls
			d.Selects -= before.Selects
			d.WakerWrites -= before.WakerWrites
			d.TimedWakeups -= before.TimedWakeups
			d.EmptyWakeups -= before.EmptyWakeups
			d.UserEvents -= before.UserEvents
			d.OSEvents -= before.OSEvents
			require.Equal(t, uint64(1), d.Polls, what)
			require.Equal(t, uint64(1), d.Selects, "%s: selects", what)
			require.Zero(t, d.WakerWrites, "%s: waker writes", what)
			require.Zero(t, d.TimedWakeups, "%s: timed wake-ups", what)
			require.Zero(t, d.EmptyWakeups, "%s: empty wake-ups", what)
			require.Zero(t, d.UserEvents+d.OSEvents, "%s: events", what)
		}
		p := newPoll(t)
		check(p, "nothing registered")
		r, s := newRegistered(t, p, 1, Readable, Level)
		newRegistered(t, p, 2, Readable, Edge)
		check(p, "registered, not ready")
		require.NoError(t, s.SetReadiness(Writable))
		check(p, "ready outside the interest")
		require.NoError(t, s.DelayReadiness(Readable, 5*time.Millisecond))
		ev := NewEvents(8)
		waitEvent(t, p, ev, 1)
		require.NoError(t, s.UnsetReadiness(Readable))
		require.Empty(t, pollEvents(t, p, ev, 0))
		check(p, "after a delay fired")
		require.NoError(t, p.Deregister(r))
		check(p, "deregistered")
	})
}

// A pass of Poll reads the wheel's clock once when it does not block: the
// expiry at its start and the sleep's timeout share one reading, and no
// second expiry follows a look at the kernel that did not block. The
// wheel holds a delay an hour away throughout, so that every pass has the
// wheel to expire.
func TestPollReadsTheClockOncePerPass(t *testing.T) {
	p := newPollConfig(t, Config{})
	far, farSet := NewRegistration()
	t.Cleanup(func() { _ = far.Close() })
	require.NoError(t, p.Register(far, 1, Readable, Edge))
	require.NoError(t, farSet.DelayReadiness(Readable, time.Hour))
	reg, set := NewRegistration()
	t.Cleanup(func() { _ = reg.Close() })
	require.NoError(t, p.Register(reg, 2, Readable, Level))
	ev := NewEvents(4)

	before := p.wheel.ClockReads()
	n, err := p.Poll(ev, 0)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Equal(t, uint64(1), p.wheel.ClockReads()-before, "a Poll that did not block")

	require.NoError(t, set.SetReadiness(Readable))
	before = p.wheel.ClockReads()
	n, err = p.Poll(ev, -1)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, uint64(1), p.wheel.ClockReads()-before, "a Poll that found an event")
}
