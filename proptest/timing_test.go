//go:build linux

package proptest

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"sort"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
)

// Rule 10: delayed readiness fires no earlier than asked and at most one
// wheel tick late; an idle Poll with nothing pending does not wake up.

// lateSlack is the scheduling noise allowed on top of one tick: a loaded CI
// machine under -race, with other test binaries running in parallel, was
// seen to be 100ms late; on a machine with more runnable threads than
// cores it grows with the load average (a goroutine waiting for a core is
// not the wheel's lateness). A wheel that misses a deadline sleeps for the
// whole Poll timeout (500ms here) or forever, which is what this catches.
var lateSlack = 250 * time.Millisecond * time.Duration(max(1, loadPerCPU()))

// loadPerCPU is the one-minute load average per CPU, rounded up (1 when it
// cannot be read).
func loadPerCPU() int {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 1
	}
	var load float64
	if _, err := fmt.Sscan(string(b), &load); err != nil {
		return 1
	}
	return int(math.Ceil(load / float64(runtime.NumCPU())))
}

// TestDelayTiming registers a few Registrations with drawn delays, modes,
// wheel ticks and sizes, and blocks in Poll until every delay has fired.
// Each must arrive no earlier than its delay (measured from before the
// DelayReadiness call) and no later than one tick (plus noise) after it
// (measured from after the call).
func TestDelayTiming(t *testing.T) {
	forEachBackendSoak(t, 10, func(be string) func(*rapid.T) {
		return func(t *rapid.T) { delayTiming(t, be) }
	})
}

func delayTiming(t *rapid.T, be string) {
	totals.checks.Add(1)
	tick := rapid.SampledFrom([]time.Duration{time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond}).Draw(t, "tick")
	slots := rapid.SampledFrom([]int{64, 16, 4, 2}).Draw(t, "slots per level")
	p, err := poll.NewWithConfig(poll.Config{Backend: be, WheelTick: tick, WheelSlots: slots})
	if err != nil {
		t.Fatalf("poll: %v", err)
	}
	defer p.Close()
	type delayed struct {
		d          time.Duration
		start, end time.Time // of the DelayReadiness call
		got        time.Time
		opts       poll.PollOpt
	}
	n := rapid.IntRange(1, 4).Draw(t, "registrations")
	ds := make([]*delayed, n)
	for i := range ds {
		r, s := poll.NewRegistration()
		defer r.Close()
		x := &delayed{opts: drawOpts(t)}
		x.d = time.Duration(rapid.IntRange(0, 25).Draw(t, "delay ms"))*time.Millisecond +
			time.Duration(rapid.IntRange(0, 999).Draw(t, "delay µs"))*time.Microsecond
		if err := p.Register(r, poll.Token(i), poll.Readable, x.opts); err != nil {
			t.Fatalf("Register: %v", err)
		}
		pause(rapid.IntRange(0, 5).Draw(t, "pause"))
		x.start = time.Now()
		if err := s.DelayReadiness(poll.Readable, x.d); err != nil {
			t.Fatalf("DelayReadiness: %v", err)
		}
		x.end = time.Now()
		ds[i] = x
	}
	capacity := rapid.IntRange(1, 4).Draw(t, "capacity")
	blocking := rapid.Bool().Draw(t, "block forever")
	ev := poll.NewEvents(capacity)
	left := n
	limit := time.Now().Add(2 * time.Second)
	closer := time.AfterFunc(2*time.Second, func() { p.Close() })
	defer closer.Stop()
	for left > 0 {
		timeout := time.Duration(-1)
		if !blocking {
			timeout = 500 * time.Millisecond
		}
		_, err := p.Poll(ev, timeout)
		now := time.Now()
		if err != nil || now.After(limit) {
			var pending []string
			for i, x := range ds {
				if x.got.IsZero() {
					pending = append(pending, fmt.Sprintf("registration %d (%s, delay %v)", i, x.opts, x.d))
				}
			}
			t.Fatalf("Poll blocked for 2s (%v) with delays still pending: %v (rule 10: at most one tick late; wheel tick %v, %d slots)", err, pending, tick, slots)
		}
		totals.polls.Add(1)
		for e := range ev.All() {
			totals.events.Add(1)
			x := ds[e.Token]
			if !x.got.IsZero() {
				continue // level: reported again
			}
			x.got = now
			left--
		}
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(i, j int) bool { return ds[order[i]].d < ds[order[j]].d })
	for _, i := range order {
		x := ds[i]
		if early := x.start.Add(x.d).Sub(x.got); early > 0 {
			t.Fatalf("registration %d: DelayReadiness(Readable, %v) was reported %v early (wheel tick %v, %d slots) (rule 10)", i, x.d, early, tick, slots)
		}
		if late := x.got.Sub(x.end.Add(x.d)); late > tick+lateSlack {
			t.Fatalf("registration %d: DelayReadiness(Readable, %v) was reported %v late, more than one tick (%v) plus %v of noise (%d slots) (rule 10)", i, x.d, late, tick, lateSlack, slots)
		}
	}
	totals.rounds.Add(int64(n))
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
	forEachBackendSoak(t, 10, func(be string) func(*rapid.T) {
		return func(t *rapid.T) { idlePoll(t, be) }
	})
}

// idleWaitBound is the most system calls an idle Poll may make: a wait, a
// return to waiting after the first settled event, and on poll(2) the
// looks at a descriptor that rests after a hang-up (two calls each, at
// 10ms and 30ms into a rest: see sys/poll_rest_unix.go).
const idleWaitBound = 8

func idlePoll(t *rapid.T, be string) {
	totals.checks.Add(1)
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
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				t.Fatalf("socketpair: %v", err)
			}
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
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				t.Fatalf("socketpair: %v", err)
			}
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
