package poll

// Test helpers (see testutil_test.go for the conventions): polling, and
// asserting what a Poll call reports.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/testsupport"
)

// pollEvents makes one p.Poll(ev, timeout) call, requires it to succeed,
// checks rule 1 (no token twice in one call) and returns a copy of the
// events.
func pollEvents(t testing.TB, p *Poll, ev *Events, timeout time.Duration) []Event {
	t.Helper()
	n, err := p.Poll(ev, timeout)
	require.NoError(t, err, "Poll")
	require.Equal(t, ev.Len(), n, "Poll's count and ev.Len() differ")
	require.LessOrEqual(t, n, ev.Cap())
	out := make([]Event, 0, n)
	for e := range ev.All() {
		out = append(out, e)
	}
	requireUniqueTokens(t, out)
	return out
}

// requireUniqueTokens fails if a token appears twice in one call's events
// (rule 1).
func requireUniqueTokens(t testing.TB, evs []Event) {
	t.Helper()
	seen := make(map[Token]bool, len(evs))
	for _, e := range evs {
		require.False(t, seen[e.Token], "rule 1: token %d reported twice in one Poll call: %v", e.Token, evs)
		seen[e.Token] = true
	}
}

// pollUntil calls p.Poll(ev, ...) repeatedly, with short timeouts, until
// cond returns true for the events of one call, and returns those events. It
// fails the test if deadline (a duration from now) passes first. cond sees
// each call's events, also an empty slice when a call timed out. Every call
// is checked for rule 1 (see pollEvents).
func pollUntil(t testing.TB, p *Poll, ev *Events, cond func(evs []Event) bool, deadline time.Duration) []Event {
	t.Helper()
	end := time.Now().Add(deadline)
	var last []Event
	for {
		left := time.Until(end)
		if left <= 0 {
			require.FailNowf(t, "pollUntil: condition not met", "within %v; last events %v", deadline, last)
		}
		last = pollEvents(t, p, ev, min(left, 50*time.Millisecond))
		if cond(last) {
			return last
		}
	}
}

// waitEvent polls until an event for tok arrives and returns its readiness.
// Other tokens' events are ignored.
func waitEvent(t testing.TB, p *Poll, ev *Events, tok Token) Ready {
	t.Helper()
	var r Ready
	pollUntil(t, p, ev, func(evs []Event) bool {
		var ok bool
		r, ok = findToken(evs, tok)
		return ok
	}, eventWait)
	return r
}

// findToken returns the readiness of tok's event in evs.
func findToken(evs []Event, tok Token) (Ready, bool) {
	for _, e := range evs {
		if e.Token == tok {
			return e.Ready, true
		}
	}
	return 0, false
}

// requireNoEvents asserts that one Poll call with a short timeout reports
// nothing at all.
func requireNoEvents(t testing.TB, p *Poll, ev *Events) {
	t.Helper()
	evs := pollEvents(t, p, ev, noEventWait)
	require.Empty(t, evs, "want no events")
}

// requireOnly makes one Poll call that must report exactly one event, for
// tok with readiness want, and nothing else.
func requireOnly(t testing.TB, p *Poll, ev *Events, tok Token, want Ready) {
	t.Helper()
	evs := pollEvents(t, p, ev, noEventWait)
	require.Equal(t, []Event{{Token: tok, Ready: want}}, evs)
}

type pollResult struct {
	evs []Event
	err error
}

// pollAsync starts one p.Poll(ev, timeout) call in a new goroutine and
// returns the channel its result arrives on.
func pollAsync(p *Poll, ev *Events, timeout time.Duration) <-chan pollResult {
	ch := make(chan pollResult, 1)
	go func() {
		_, err := p.Poll(ev, timeout)
		var evs []Event
		for e := range ev.All() {
			evs = append(evs, e)
		}
		ch <- pollResult{evs, err}
	}()
	return ch
}

// awaitPoll waits for a pollAsync result. If none arrives within eventWait
// it fails the test after closing p, which makes the stuck Poll return, so
// that no goroutine is leaked.
func awaitPoll(t testing.TB, p *Poll, ch <-chan pollResult, what string) pollResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(eventWait):
		_ = p.Close()
		<-ch
		require.FailNowf(t, "blocked Poll did not return", "%s: no wake-up within %v", what, eventWait)
		return pollResult{}
	}
}

// ---------------------------------------------------------------------------
// Waiting for the goroutine in Poll

// waitSelecting waits until p has entered its selector more than before
// times (see Stats.Selects): a goroutine calling Poll with a negative
// timeout is then in, or about to enter, its blocking wait. It is how a test
// makes the "wakes a blocked Poll" case likely without sleeping; the tests
// that use it are correct whichever way the race goes.
func waitSelecting(t testing.TB, p *Poll, before uint64) {
	t.Helper()
	testsupport.WaitFor(t, "Poll to enter its selector", func() bool { return p.Stats().Selects > before })
}

// waitAsleep waits until the goroutine in p.Poll has announced that it is
// about to block (the queue's sleep word), and fails the test if it does
// not within eventWait.
func waitAsleep(t testing.TB, p *Poll) {
	t.Helper()
	testsupport.WaitFor(t, "Poll to go to sleep", func() bool { return p.queue.sleep.Load() == queueAsleep })
}

// ---------------------------------------------------------------------------
// Tables

// requireNext asserts that the very next Poll call, with timeout 0, reports
// tok with exactly want (rule 5: "notifies at once").
func requireNext(t testing.TB, p *Poll, ev *Events, tok Token, want Ready) {
	t.Helper()
	evs := pollEvents(t, p, ev, 0)
	r, ok := findToken(evs, tok)
	require.True(t, ok, "next Poll(0) did not report token %d; got %v", tok, evs)
	require.Equal(t, want, r, "token %d", tok)
}

// requireEvent waits for tok and requires exactly want.
func requireEvent(t testing.TB, p *Poll, ev *Events, tok Token, want Ready) {
	t.Helper()
	require.Equal(t, want, waitEvent(t, p, ev, tok), "token %d", tok)
}
