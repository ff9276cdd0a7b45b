//go:build linux

package proptest

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/timer"
)

// Rule 10: delayed readiness fires no earlier than asked and at most one
// wheel tick late; an idle Poll with nothing pending does not wake up.

// lateSlack is the scheduling noise allowed on top of one tick: a loaded CI
// machine under -race, with other test binaries running in parallel, was
// seen to be 100ms late; on a machine with more runnable threads than
// cores it grows with the load average (a goroutine waiting for a core is
// not the wheel's lateness). A wheel that misses a deadline sleeps for the
// whole Poll timeout (500ms here) or forever, which is what this catches.
var lateSlack = 250 * time.Millisecond * time.Duration(max(1, testsupport.LoadPerCPU()))

// TestDelayTiming (rule 10, issue 22): deadlines of both kinds, a
// Registration's DelayReadiness and a timer.Timer's Set (with a drawn
// Tick), on wheels of drawn ticks and sizes, with drawn modes, and a
// consumer that polls (blocking forever, or with a timeout) until each has
// been reported. The bounds are exact, with the deadline between lo and hi
// (the clock readings around the call that set it, plus its duration) and
// window the tick, or a Timer's Tick in whole ticks:
//
//   - never early: no call that ended before lo reports it;
//   - at most one window late: a call that started at or after mustBy =
//     hi + window reports it (the wheel fires what is due first thing);
//     a call that was in Poll when mustBy passed returns no later than
//     mustBy plus the scheduling delay measured for that call
//     (timing_meter_test.go: timer slack, time waiting for a processor,
//     time running), reporting it.
//
// Lateness the meter cannot account for makes an attempt undecided, and
// an interrupt's latency is not measured either: a late or undecided
// attempt is made again, up to timingAttempts times, and the check fails
// if no attempt was on time and one was late.
func TestDelayTiming(t *testing.T) {
	forEachBackendSoak(t, 10, delayTiming)
	t.Logf("attempts: %d on time, %d late beyond the measured delay, %d undecided",
		timingStats.onTime.Load(), timingStats.late.Load(), timingStats.undecided.Load())
}

// timingStats counts the attempts of TestDelayTiming by outcome.
var timingStats struct{ onTime, late, undecided atomic.Int64 }

// timingAttempts is how many times a check is tried before a lateness
// counts.
const timingAttempts = 5

// timedDeadline is one deadline of TestDelayTiming.
type timedDeadline struct {
	label string
	reg   *poll.Registration
	set   *poll.SetReadiness // a Registration's DelayReadiness, or
	tm    *timer.Timer[int]  // a Timer's Set
	d     time.Duration
	win   time.Duration // the tick, or the Timer's Tick in whole ticks
	opts  poll.PollOpt

	lo, hi, mustBy time.Time // of this attempt
	got            bool
}

func delayTiming(t *rapid.T, be string) {
	// The meter reads this thread's counters (timing_meter_test.go).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tick := rapid.SampledFrom([]time.Duration{time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond}).Draw(t, "tick")
	slots := rapid.SampledFrom([]int{64, 16, 4, 2}).Draw(t, "slots per level")
	p, err := poll.NewWithConfig(poll.Config{Backend: be, WheelTick: tick, WheelSlots: slots})
	if err != nil {
		t.Fatalf("poll: %v", err)
	}
	defer p.Close()
	n := rapid.IntRange(1, 4).Draw(t, "deadlines")
	ds := make([]*timedDeadline, n)
	for i := range ds {
		x := &timedDeadline{opts: drawOpts(t), win: tick}
		x.d = time.Duration(rapid.IntRange(0, 25).Draw(t, "delay ms"))*time.Millisecond +
			time.Duration(rapid.IntRange(0, 999).Draw(t, "delay µs"))*time.Microsecond
		var ev poll.Evented
		if rapid.Bool().Draw(t, "timer") {
			res := rapid.SampledFrom([]time.Duration{0, 3 * time.Millisecond, 10 * time.Millisecond}).Draw(t, "timer resolution")
			tm, err := timer.New[int](timer.Tick(res))
			if err != nil {
				t.Fatalf("timer.New: %v", err)
			}
			defer tm.Close()
			x.tm, ev = tm, tm
			x.win = max(tick, (res+tick-1)/tick*tick)
			x.label = fmt.Sprintf("deadline %d (%s, timer.Set(%v) with Tick(%v))", i, x.opts, x.d, res)
		} else {
			r, s := poll.NewRegistration()
			defer r.Close()
			x.reg, x.set, ev = r, s, r
			x.label = fmt.Sprintf("deadline %d (%s, DelayReadiness(Readable, %v))", i, x.opts, x.d)
		}
		if err := p.Register(ev, poll.Token(i), poll.Readable, x.opts); err != nil {
			t.Fatalf("Register: %v", err)
		}
		ds[i] = x
	}
	pauses := make([]int, n)
	for i := range pauses {
		pauses[i] = rapid.IntRange(0, 5).Draw(t, "pause")
	}
	capacity := rapid.IntRange(n, 4).Draw(t, "capacity")
	timeout := rapid.SampledFrom([]time.Duration{-1, -1, time.Millisecond, 7 * time.Millisecond, 500 * time.Millisecond}).Draw(t, "Poll timeout")
	closer := time.AfterFunc(time.Hour, func() { p.Close() })
	defer closer.Stop()
	var lates []string
	for attempt := 1; attempt <= timingAttempts; attempt++ {
		late, decided := timingAttempt(t, p, ds, pauses, capacity, timeout, closer)
		totals.rounds.Add(int64(n))
		switch {
		case late != "":
			timingStats.late.Add(1)
			lates = append(lates, late)
		case !decided:
			timingStats.undecided.Add(1)
		default:
			timingStats.onTime.Add(1)
			return
		}
	}
	if len(lates) > 0 {
		// The figures go to the log: a message that varies with timing
		// stops rapid from shrinking the case.
		t.Logf("late attempts:\n  %s", strings.Join(lates, "\n  "))
		t.Fatalf("in %d attempts none was on time: a deadline came late beyond the scheduling delay measured (wheel tick %v, %d slots; rule 10: at most one tick, or one Tick, late)",
			timingAttempts, tick, slots)
	}
	t.Logf("no attempt could be decided: the meter saw delays it cannot measure")
}

// timingAttempt sets every deadline and polls until each is reported. It
// fails the check on an early event or an event not reported by a call
// that started after it was due (exact); it returns the first deadline
// that came late beyond the scheduling delay measured for its call, if
// one did, and whether the meter could decide every call.
func timingAttempt(t *rapid.T, p *poll.Poll, ds []*timedDeadline, pauses []int, capacity int, timeout time.Duration, closer *time.Timer) (late string, decided bool) {
	for i, x := range ds {
		pause(pauses[i])
		x.got = false
		start := time.Now()
		var err error
		if x.tm != nil {
			_, err = x.tm.Set(x.d, i)
		} else {
			err = x.set.DelayReadiness(poll.Readable, x.d)
		}
		end := time.Now()
		if err != nil {
			t.Fatalf("%s: %v", x.label, err)
		}
		x.lo, x.hi, x.mustBy = start.Add(x.d), end.Add(x.d), end.Add(x.d+x.win)
	}
	slack := timerSlack()
	ev := poll.NewEvents(capacity)
	left := len(ds)
	limit := time.Now().Add(2 * time.Second)
	closer.Reset(2 * time.Second)
	decided = true
	for call := 1; left > 0; call++ {
		before := p.Stats()
		a, okA := sampleThread()
		start := time.Now()
		_, err := p.Poll(ev, timeout)
		end := time.Now()
		b, okB := sampleThread()
		after := p.Stats()
		if err != nil || end.After(limit) {
			var pending []string
			for _, x := range ds {
				if !x.got {
					pending = append(pending, x.label)
				}
			}
			t.Fatalf("Poll(%v) blocked for 2s (%v) with deadlines still pending: %v (rule 10: at most one tick late)", timeout, err, pending)
		}
		totals.polls.Add(1)
		nz := measure(a, b, okA, okB, after.TimedWakeups-before.TimedWakeups, slack)
		reported := map[poll.Token]bool{}
		for e := range ev.All() {
			totals.events.Add(1)
			reported[e.Token] = true
		}
		for i, x := range ds {
			if x.got {
				continue
			}
			if reported[poll.Token(i)] {
				if end.Before(x.lo) {
					t.Logf("the call ended %v before the deadline", x.lo.Sub(end))
					t.Fatalf("%s was reported before its deadline (rule 10)", x.label)
				}
				x.got = true
				left--
				// Take what fired, so that the source is quiet again.
				if x.tm != nil {
					for range x.tm.Drain() {
					}
				} else if err := x.set.UnsetReadiness(poll.Readable); err != nil {
					t.Fatalf("UnsetReadiness: %v", err)
				}
				if x.opts.IsOneshot() { // armed again for the next attempt
					var ev poll.Evented = x.tm
					if x.tm == nil {
						ev = x.reg
					}
					if err := p.Reregister(ev, poll.Token(i), poll.Readable, x.opts); err != nil {
						t.Fatalf("Reregister: %v", err)
					}
				}
			} else if !start.Before(x.mustBy) {
				t.Logf("the call started %v after the deadline's last tick", start.Sub(x.mustBy))
				t.Fatalf("%s was not reported by a Poll call that started after its deadline's last tick, with room for it (rule 10: at most one tick late)", x.label)
			}
			if !start.Before(x.mustBy) || !end.After(x.mustBy) {
				continue // not in Poll when it came due: nothing to measure
			}
			excess := end.Sub(x.mustBy) - nz.delay
			if excess <= 0 {
				continue
			}
			if !nz.decided {
				decided = false
				continue
			}
			if late == "" {
				late = fmt.Sprintf("%s: Poll call %d returned %v after the deadline's last tick, %v more than the %v of scheduling delay measured",
					x.label, call, end.Sub(x.mustBy), excess, nz.delay)
			}
		}
	}
	return late, decided
}

// TestIdlePoll: a Poll call with nothing to report sleeps for its whole
// timeout, entering the selector once or twice and the kernel a bounded
// number of times (Stats.KernelWaits counts the system calls, so a
// selector that spins inside one Select is caught too), whatever is
// registered: sources that are not ready, a delay due long after the
// timeout, a cancelled delay, descriptors whose only kernel readiness (a
// hang-up) is outside their interest, and descriptors that stay ready
// after they were reported: an edge that is not re-armed, a oneshot that
// is disarmed, readiness outside a level interest.
func TestIdlePoll(t *testing.T) {
	forEachBackendSoak(t, 10, idlePoll)
}

// idleWaitBound is the most system calls an idle Poll may make: a wait, a
// return to waiting after the first settled event, and on poll(2) the
// looks at a descriptor that rests after a hang-up (two calls each, at
// 10ms and 30ms into a rest: see sys/poll_rest_unix.go).
const idleWaitBound = 8

func idlePoll(t *rapid.T, be string) {
	p, err := poll.NewWithConfig(poll.Config{Backend: be})
	if err != nil {
		t.Fatalf("poll: %v", err)
	}
	defer p.Close()
	var setup []string
	for i, n := 0, rapid.IntRange(0, 4).Draw(t, "idle sources"); i < n; i++ {
		what := rapid.SampledFrom([]string{
			"registration, not ready", "registration, delay due in 1s", "registration, cancelled delay",
			"socket, no data", "socket, data outside interest", "pipe, writer closed, interest outside",
			"socket, writable, reported",
		}).Draw(t, "idle source")
		opts := drawOpts(t)
		tok := poll.Token(i + 1)
		switch what {
		case "registration, not ready", "registration, delay due in 1s", "registration, cancelled delay":
			r, s := poll.NewRegistration()
			defer r.Close()
			if err := p.Register(r, tok, poll.Readable, opts); err != nil {
				t.Fatalf("Register: %v", err)
			}
			_ = s.SetReadiness(poll.Writable) // outside the interest
			switch what {
			case "registration, delay due in 1s":
				_ = s.DelayReadiness(poll.Readable, time.Second)
			case "registration, cancelled delay":
				_ = s.DelayReadiness(poll.Readable, time.Millisecond)
				_ = s.UnsetReadiness(poll.Readable)
			}
		case "socket, no data", "socket, data outside interest":
			fds := socketPair(t)
			defer unix.Close(fds[0])
			defer unix.Close(fds[1])
			interest := poll.Readable
			if what == "socket, data outside interest" {
				_, _ = unix.Write(fds[1], []byte("x"))
				interest = poll.Priority
			}
			if err := p.Register(poll.Fd(fds[0]), tok, interest, opts); err != nil {
				t.Fatalf("Register: %v", err)
			}
		case "pipe, writer closed, interest outside":
			var fds [2]int
			if err := unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
				t.Fatalf("pipe: %v", err)
			}
			defer unix.Close(fds[0])
			_ = unix.Close(fds[1])
			interest := rapid.SampledFrom([]poll.Ready{poll.Error, poll.Writable, poll.Priority}).Draw(t, "interest")
			if err := p.Register(poll.Fd(fds[0]), tok, interest, opts); err != nil {
				t.Fatalf("Register: %v", err)
			}
			what += " (" + interest.String() + ")"
		case "socket, writable, reported":
			// Stays writable: reported by the settling calls below, then
			// quiet as an edge that is not re-armed or a disarmed oneshot.
			if opts.IsLevel() && !opts.IsOneshot() {
				opts = poll.Edge
			}
			fds := socketPair(t)
			defer unix.Close(fds[0])
			defer unix.Close(fds[1])
			if err := p.Register(poll.Fd(fds[0]), tok, poll.Readable|poll.Writable, opts); err != nil {
				t.Fatalf("Register: %v", err)
			}
		}
		setup = append(setup, what+", "+opts.String())
	}
	ev := poll.NewEvents(4)
	// Settle: the first calls may report what registration found ready, or
	// take a kernel event that Poll drops.
	for range 3 {
		_, _ = p.Poll(ev, 0)
	}
	timeout := time.Duration(rapid.IntRange(5, 30).Draw(t, "timeout ms")) * time.Millisecond
	before := p.Stats()
	start := time.Now()
	n, err := p.Poll(ev, timeout)
	el := time.Since(start)
	after := p.Stats()
	totals.polls.Add(1)
	if err != nil || n != 0 {
		t.Fatalf("idle Poll(%v) = %d, %v with %v", timeout, n, err, setup)
	}
	if el < timeout {
		t.Fatalf("idle Poll(%v) returned after %v", timeout, el)
	}
	if sel, waits := after.Selects-before.Selects, after.KernelWaits-before.KernelWaits; sel > 2 || waits > idleWaitBound {
		t.Fatalf("idle Poll(%v) with %v entered the selector %d times and the kernel %d times (%d empty wake-ups): it spins instead of sleeping (rule 10)",
			timeout, setup, sel, waits, after.EmptyWakeups-before.EmptyWakeups)
	}
}
