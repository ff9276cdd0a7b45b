package channel

// Helpers for this package's tests (those several packages share are in
// internal/testsupport). Polls are real: poll.New, so the backend is the one
// UNIPOLL_BACKEND names (CI runs the suite with epoll and with poll).
// Waiting is for a condition with a deadline (testsupport.WaitFor), never
// time.Sleep; a short Poll timeout (noEventWait) is how a test asserts that
// nothing is reported.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/poll"
)

const (
	noEventWait = testsupport.NoEventWait
	eventWait   = testsupport.EventWait
)

// newPoll opens a Poll closed at the test's cleanup.
func newPoll(t testing.TB) *poll.Poll {
	t.Helper()
	p, err := poll.New()
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// pollOnce makes one Poll call with the timeout and returns what it
// reported, by token; it fails on a token reported twice (rule 1).
func pollOnce(t testing.TB, p *poll.Poll, timeout time.Duration) map[poll.Token]poll.Ready {
	t.Helper()
	ev := poll.NewEvents(16)
	_, err := p.Poll(ev, timeout)
	require.NoError(t, err)
	got := map[poll.Token]poll.Ready{}
	for e := range ev.All() {
		_, dup := got[e.Token]
		require.False(t, dup, "token %d reported twice in one Poll call", e.Token)
		got[e.Token] = e.Ready
	}
	return got
}

// waitEvent polls until tok is reported, and returns its readiness. It
// fails after eventWait.
func waitEvent(t testing.TB, p *poll.Poll, tok poll.Token) poll.Ready {
	t.Helper()
	deadline := time.Now().Add(eventWait)
	for time.Now().Before(deadline) {
		if r, ok := pollOnce(t, p, time.Until(deadline))[tok]; ok {
			return r
		}
	}
	require.FailNow(t, "no event", "token %d not reported within %v", tok, eventWait)
	return 0
}

// expectNoEvent asserts that a Poll call of noEventWait does not report tok.
func expectNoEvent(t testing.TB, p *poll.Poll, tok poll.Token) {
	t.Helper()
	r, ok := pollOnce(t, p, noEventWait)[tok]
	require.False(t, ok, "token %d reported (%s), expected nothing", tok, r)
}

// recvAll receives until TryRecv returns an error, and returns the values
// and that error.
func recvAll[T any](t testing.TB, rx *Receiver[T]) ([]T, error) {
	t.Helper()
	var got []T
	for {
		v, err := rx.TryRecv()
		if err != nil {
			return got, err
		}
		got = append(got, v)
	}
}
