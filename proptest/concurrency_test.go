//go:build linux

package proptest

import (
	"errors"
	"fmt"
	"iter"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
)

// Concurrency properties (run them with -race), one to a file
// (concurrency_*_test.go); this file holds what they share. Producers run
// on their own goroutines; the consumer polls on another. rapid draws the
// shape of each run: how many producers and sources, their modes, how many
// rounds, and the pauses that decide the interleaving.
//
// Timestamps come from one atomic counter (a logical clock) read before a
// Poll call starts and after an operation returns, so "Poll started after
// Deregister returned" is decided exactly, not by wall time.

// ackTimeout is how long a producer waits for its readiness to be observed
// before it declares a lost wake-up.
const ackTimeout = 2 * time.Second

// failures collects failures from any goroutine; the test goroutine
// reports them.
type failures struct {
	mu   sync.Mutex
	msgs []string
}

func (f *failures) add(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.msgs) < 20 {
		f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
	}
}

// failed reports whether a failure was recorded.
func (f *failures) failed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.msgs) > 0
}

func (f *failures) report(t *rapid.T) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.msgs) > 0 {
		t.Fatalf("%d failure(s):\n  %s", len(f.msgs), strings.Join(f.msgs, "\n  "))
	}
}

// pause is one step of a drawn schedule.
func pause(k int) {
	switch k {
	case 0:
	case 1:
		runtime.Gosched()
	case 2:
		time.Sleep(20 * time.Microsecond)
	default:
		time.Sleep(time.Duration(k-2) * 150 * time.Microsecond)
	}
}

func drawSchedule(t *rapid.T, n int, label string) []int {
	return rapid.SliceOfN(rapid.IntRange(0, 5), n, n).Draw(t, label)
}

// spinChoices are the Config.SpinWait values drawn: the default, no spin
// (the consumer goes to sleep at once: every wake-up goes through the
// waker), and a long one.
var spinChoices = []time.Duration{0, -1, 200 * time.Microsecond}

// drawPoll opens a Poll on backend be with a drawn SpinWait; the caller
// closes it (a rapid.T has no cleanup).
func drawPoll(t *rapid.T, be string) *poll.Poll {
	spin := rapid.SampledFrom(spinChoices).Draw(t, "spin wait (0 default, -1 none)")
	p, err := poll.NewWithConfig(poll.Config{Backend: be, SpinWait: spin})
	if err != nil {
		t.Fatalf("poll: %v", err)
	}
	return p
}

// forEachBackend checks prop on every backend under test, a subtest each.
func forEachBackend(t *testing.T, prop func(t *rapid.T, be string)) {
	forEachBackendSoak(t, 1, prop)
}

// forEachBackendSoak is forEachBackend for properties whose soak is divided
// by soakDiv (see checkScaledSoak).
func forEachBackendSoak(t *testing.T, soakDiv int, prop func(t *rapid.T, be string)) {
	forBackends(t, func(t *testing.T, b string) {
		checkScaledSoak(t, 1, soakDiv, func(t *rapid.T) {
			totals.checks.Add(1)
			prop(t, b)
		})
	})
}

// source is what a concurrency property registers: a Registration (reg
// and set), or else the socket pair a (registered) and b (written by a
// producer).
type source struct {
	reg  *poll.Registration
	set  *poll.SetReadiness
	a, b int
}

// noSource is a source before it is opened: neither a Registration nor
// sockets.
var noSource = source{a: -1, b: -1}

func (s *source) evented() poll.Evented {
	if s.reg != nil {
		return s.reg
	}
	return poll.Fd(s.a)
}

// consumerPoll is one Poll call of a consumer goroutine: it counts the call
// in totals and reports whether the consumer goes on. Any error ends it and
// is reported to fail, except ErrClosed where the property ends the run by
// Close (untilClosed).
func consumerPoll(p *poll.Poll, ev *poll.Events, timeout time.Duration, untilClosed bool, fail func(string, ...any)) bool {
	_, err := p.Poll(ev, timeout)
	switch {
	case err == nil:
		totals.polls.Add(1)
		return true
	case untilClosed && errors.Is(err, poll.ErrClosed):
	default:
		fail("Poll: %v", err)
	}
	return false
}

// counted yields the events of ev, counting each in totals.
func counted(ev *poll.Events) iter.Seq[poll.Event] {
	return func(yield func(poll.Event) bool) {
		for e := range ev.All() {
			totals.events.Add(1)
			if !yield(e) {
				return
			}
		}
	}
}

// stopped reports whether stop is closed, without waiting.
func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// waitGroupTimeout waits for wg; false if it took longer than d.
func waitGroupTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}
