//go:build linux

package proptest

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/poll"
)

// Regression tests: the shrunk counterexamples the properties found in the
// library, as plain deterministic tests.

// TestRegressionSmallWheelNextDue (TestDelayTiming, TestStateMachine):
// with fewer than 64 wheel slots, wheel.nextDue skips from the current slot
// to "the next 64-bit word" of the occupancy bitmap, k += 64 - (s&63),
// which overshoots the whole wheel, so an entry in a slot before the
// current one (a due tick that wrapped around) is never found: nextDue
// returns "nothing due" and the Poll sleeps for its whole timeout, forever
// with Poll(-1). Shrunk case: WheelTick 1ms, WheelSlots 4, one Level
// Registration, DelayReadiness(Readable, 2.001ms), Poll(-1) never returns.
// Whether the due slot wraps depends on the clock, so every shape is tried
// at several offsets.
func TestRegressionSmallWheelNextDue(t *testing.T) {
	for _, be := range backendsUnderTest() {
		for _, slots := range []int{4, 16, 32} {
			t.Run(fmt.Sprintf("%s/%d slots", be, slots), func(t *testing.T) {
				for i := 0; i < 8; i++ {
					p, err := poll.NewWithConfig(poll.Config{Backend: be, WheelTick: time.Millisecond, WheelSlots: slots})
					if err != nil {
						t.Fatal(err)
					}
					r, s := poll.NewRegistration()
					if err := p.Register(r, 1, poll.Readable, poll.Level); err != nil {
						t.Fatal(err)
					}
					d := 2*time.Millisecond + time.Duration(i)*time.Millisecond + time.Microsecond
					start := time.Now()
					if err := s.DelayReadiness(poll.Readable, d); err != nil {
						t.Fatal(err)
					}
					watchdog := time.AfterFunc(time.Second, func() { p.Close() })
					n, err := p.Poll(poll.NewEvents(1), -1)
					watchdog.Stop()
					el := time.Since(start)
					_ = r.Close()
					_ = p.Close()
					if err != nil || n != 1 {
						t.Fatalf("DelayReadiness(Readable, %v) with %d slots: Poll(-1) = %d, %v after %v: the delay was never found due", d, slots, n, err, el)
					}
					if el > d+lateSlack {
						t.Fatalf("DelayReadiness(Readable, %v) with %d slots: reported after %v", d, slots, el)
					}
				}
			})
		}
	}
}

// TestRegressionFilteredHangupSpins (TestIdlePoll): a descriptor whose
// only kernel readiness is a hang-up outside its interest (a pipe whose
// writer closed, registered with an Error, Writable or Priority interest;
// the test first had an empty interest, which is refused now) makes every
// select return at
// once with an event that deliverFd drops, so Poll(timeout) spins for its
// whole timeout (forever with Poll(-1)): tens of thousands of selects in
// 20ms. On epoll, Level and Oneshot spin (Oneshot because deliverFd re-arms
// the descriptor after a filtered event); on poll(2), Edge too (edge is
// emulated by level).
func TestRegressionFilteredHangupSpins(t *testing.T) {
	for _, be := range backendsUnderTest() {
		for _, opts := range []poll.PollOpt{poll.Level, poll.Level | poll.Oneshot, poll.Edge, poll.Edge | poll.Oneshot} {
			for _, interest := range []poll.Ready{poll.Error, poll.Writable, poll.Priority} {
				t.Run(fmt.Sprintf("%s/%s/%s", be, opts, interest), func(t *testing.T) {
					p := regressionPoll(t, poll.Config{Backend: be})
					var fds [2]int
					if err := unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
						t.Fatal(err)
					}
					defer unix.Close(fds[0])
					unix.Close(fds[1]) // the writer hangs up
					if err := p.Register(poll.Fd(fds[0]), 1, interest, opts); err != nil {
						t.Fatal(err)
					}
					ev := poll.NewEvents(4)
					_, _ = p.Poll(ev, 0) // the first filtered event may take a select
					before := p.Stats()
					n, err := p.Poll(ev, 20*time.Millisecond)
					after := p.Stats()
					if err != nil || n != 0 {
						t.Fatalf("Poll = %d, %v", n, err)
					}
					if sel, waits := after.Selects-before.Selects, after.KernelWaits-before.KernelWaits; sel > 2 || waits > idleWaitBound {
						t.Fatalf("an idle Poll(20ms) entered the selector %d times and the kernel %d times (%d empty wake-ups): it spins on a hang-up outside the interest (rule 10)",
							sel, waits, after.EmptyWakeups-before.EmptyWakeups)
					}
				})
			}
		}
	}
}

// TestRegressionReregisterTokenInterest (TestConcurrentRetire): a
// Registration's Reregister stores the new token before the CAS that
// installs the new interest, and deliverNode reads the token after its own
// CAS; a delivery racing with Reregister can pair the new token with
// readiness masked by the old interest. Shrunk case: one Level
// Registration, readiness Readable|Writable|Hup, interest Readable|Writable;
// Reregister(token 2, Readable) concurrent with Poll reports
// Event{Token: 2, Ready: Readable|Writable}. Here: tokens alternate
// between interests Readable (odd) and Writable (even) while a consumer
// polls; every event must match its token's interest.
func TestRegressionReregisterTokenInterest(t *testing.T) {
	for _, be := range backendsUnderTest() {
		for _, opts := range []poll.PollOpt{poll.Level, poll.Edge, poll.Level | poll.Oneshot} {
			t.Run(fmt.Sprintf("%s/%s", be, opts), func(t *testing.T) {
				p := regressionPoll(t, poll.Config{Backend: be})
				r, s := poll.NewRegistration()
				defer r.Close()
				interestOf := func(tok poll.Token) poll.Ready {
					if tok%2 == 1 {
						return poll.Readable
					}
					return poll.Writable
				}
				if err := p.Register(r, 1, interestOf(1), opts); err != nil {
					t.Fatal(err)
				}
				if err := s.SetReadiness(poll.Readable | poll.Writable); err != nil {
					t.Fatal(err)
				}
				const last = 50000
				done := make(chan error, 1)
				go func() {
					for tok := poll.Token(2); tok <= last; tok++ {
						if err := p.Reregister(r, tok, interestOf(tok), opts); err != nil {
							done <- err
							return
						}
						if tok%64 == 0 {
							runtime.Gosched()
						}
					}
					done <- nil
				}()
				ev := poll.NewEvents(4)
				for finished := false; !finished; {
					select {
					case err := <-done:
						if err != nil {
							t.Fatal(err)
						}
						finished = true
					default:
					}
					if _, err := p.Poll(ev, time.Millisecond); err != nil {
						t.Fatal(err)
					}
					for e := range ev.All() {
						if e.Ready != interestOf(e.Token) {
							t.Fatalf("%v: token %d was registered with interest %s only", e, e.Token, interestOf(e.Token))
						}
					}
				}
			})
		}
	}
}

// TestRegressionParkedLosesError (found by the PROPTEST_SOAK run of
// TestStateMachine/poll after 11407 cases): a descriptor whose kernel
// readiness is a hang-up outside its interest is parked (taken out of the
// kernel's set until Reregister, so that it does not spin), but a hang-up
// is not the end of what the kernel can report: an error can follow, and
// an error in the interest is then lost. Sequence: a socket registered
// with interest Error|Priority writes to its peer; the peer shuts down both
// directions (HUP, outside the interest: parked); the peer closes with that
// data unread, which sets ECONNRESET on the socket (EPOLLERR, POLLERR):
// Error is ready and in the interest, and never reported.
func TestRegressionParkedLosesError(t *testing.T) {
	for _, be := range backendsUnderTest() {
		for _, opts := range []poll.PollOpt{poll.Level, poll.Edge, poll.Level | poll.Oneshot} {
			t.Run(fmt.Sprintf("%s/%s", be, opts), func(t *testing.T) {
				p := regressionPoll(t, poll.Config{Backend: be})
				fds := socketPair(t)
				a, b := fds[0], fds[1]
				defer unix.Close(a)
				if err := p.Register(poll.Fd(a), 1, poll.Error|poll.Priority, opts); err != nil {
					t.Fatal(err)
				}
				if _, err := unix.Write(a, []byte("unread")); err != nil {
					t.Fatal(err)
				}
				if err := unix.Shutdown(b, unix.SHUT_RDWR); err != nil { // a: HUP
					t.Fatal(err)
				}
				ev := poll.NewEvents(4)
				for i := 0; i < 3; i++ { // nothing to report: Hup is not in the interest
					if n, err := p.Poll(ev, 0); err != nil || n != 0 {
						t.Fatalf("Poll = %d, %v before the error", n, err)
					}
				}
				unix.Close(b) // unread data: ECONNRESET on a
				n, err := p.Poll(ev, 200*time.Millisecond)
				if err != nil {
					t.Fatal(err)
				}
				if n != 1 || ev.At(0).Ready&poll.Error == 0 {
					t.Fatalf("Poll = %d events %v after the peer closed with unread data: Error is ready and in the interest Error|Priority, and was lost (rules 2, 3)", n, slices.Collect(ev.All()))
				}
			})
		}
	}
}

// TestRegressionPollRestNeverRechecked (poll(2) backend; found while
// checking the model against the resting of lasting hang-ups): an
// edge-triggered descriptor whose only readiness is a hang-up it has
// reported rests out of the pollfd array, and is looked at again only when
// Select blocks for longer than restRecheck (10ms), or when a registration
// changes. A caller that polls with timeout 0 (an event loop with work
// pending) or with short timeouts never sees an error that follows: it is
// lost. Sequence: socket, interest Error|Hup, Edge; it writes to its peer;
// the peer shuts down both directions (Hup, reported once, then resting);
// the peer closes with the data unread (ECONNRESET): Poll(0) and Poll(5ms)
// never report Error. The same holds for a Level registration parked by
// package poll on a hang-up outside its interest.
func TestRegressionPollRestNeverRechecked(t *testing.T) {
	if !slices.Contains(backendsUnderTest(), "poll") {
		t.Skip("no poll(2) backend under test")
	}
	for _, timeout := range []time.Duration{0, 5 * time.Millisecond} {
		for _, opts := range []poll.PollOpt{poll.Edge, poll.Level} {
			interest := poll.Error | poll.Hup
			if opts == poll.Level {
				interest = poll.Error | poll.Priority // the hang-up is outside: parked
			}
			t.Run(fmt.Sprintf("%s/%s/timeout %v", opts, interest, timeout), func(t *testing.T) {
				p := regressionPoll(t, poll.Config{Backend: "poll"})
				fds := socketPair(t)
				a, b := fds[0], fds[1]
				defer unix.Close(a)
				if err := p.Register(poll.Fd(a), 1, interest, opts); err != nil {
					t.Fatal(err)
				}
				if _, err := unix.Write(a, []byte("unread")); err != nil {
					t.Fatal(err)
				}
				if err := unix.Shutdown(b, unix.SHUT_RDWR); err != nil {
					t.Fatal(err)
				}
				ev := poll.NewEvents(4)
				for i := 0; i < 3; i++ {
					if _, err := p.Poll(ev, 0); err != nil {
						t.Fatal(err)
					}
				}
				unix.Close(b) // ECONNRESET on a
				start := time.Now()
				for time.Since(start) < 200*time.Millisecond {
					if _, err := p.Poll(ev, timeout); err != nil {
						t.Fatal(err)
					}
					for e := range ev.All() {
						if e.Ready&poll.Error != 0 {
							return
						}
					}
				}
				t.Fatalf("an error after a reported (or parked) hang-up was not reported by Poll(%v) calls for %v: the resting descriptor is never looked at again unless Select blocks for more than 10ms (rules 2, 3, 8)", timeout, time.Since(start).Round(time.Millisecond))
			})
		}
	}
}

// regressionPoll opens a Poll with c, closed at the test's end.
func regressionPoll(t *testing.T, c poll.Config) *poll.Poll {
	t.Helper()
	p, err := poll.NewWithConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}
