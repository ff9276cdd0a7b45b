package timer

// Helpers for this package's tests, on internal/onpoll/polltest's (one Poll call
// checked against rule 1, waiting for a token, asserting that none comes).
// Polls are real: poll.New, so the backend is the one UNIPOLL_BACKEND names
// (CI runs the suite with epoll and with poll). Waiting is for a condition
// with a deadline, never time.Sleep; a short Poll timeout (noEventWait) is
// how a test asserts that nothing is reported.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/onpoll/polltest"
	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/poll"
)

const (
	noEventWait = 20 * time.Millisecond
	eventWait   = 5 * time.Second
	tok         = poll.Token(7)
)

// lateSlack is the scheduling noise allowed on top of one tick: 100ms on a
// machine that is not overloaded, more in proportion to the load average
// per core when it is (a goroutine waiting for a core is not the timer's
// lateness).
var lateSlack = 100 * time.Millisecond * time.Duration(max(1, testsupport.LoadPerCPU()))

// newPoll is polltest.New: a Poll closed at the test's cleanup.
var newPoll = polltest.New

// newTimer makes a Timer registered with p under tok, closed at cleanup.
func newTimer[T any](t testing.TB, p *poll.Poll, opts poll.PollOpt, o ...Option) *Timer[T] {
	t.Helper()
	tm, err := New[T](o...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tm.Close() })
	require.NoError(t, p.Register(tm, tok, poll.Readable, opts))
	return tm
}

// pollOnce makes one Poll call and returns whether tok was reported; it
// fails on another token, on a readiness other than Readable, or on tok
// reported twice (rule 1, polltest.PollOnce).
func pollOnce(t testing.TB, p *poll.Poll, timeout time.Duration) bool {
	t.Helper()
	got := polltest.PollOnce(t, p, timeout)
	for k, r := range got {
		require.Equal(t, tok, k)
		require.Equal(t, poll.Readable, r)
	}
	return len(got) == 1
}

// waitEvent polls until tok is reported Readable; it fails after
// eventWait.
func waitEvent(t testing.TB, p *poll.Poll) {
	t.Helper()
	require.Equal(t, poll.Readable, polltest.WaitEvent(t, p, tok, eventWait))
}

// requireNoEvent asserts that a Poll call of noEventWait reports nothing,
// of any token.
func requireNoEvent(t testing.TB, p *poll.Poll) {
	t.Helper()
	require.Empty(t, polltest.PollOnce(t, p, noEventWait), "timer reported")
}
