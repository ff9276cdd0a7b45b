// Package polltest holds test helpers that need a poll.Poll: a Poll closed
// at the test's end, one Poll call checked against rule 1, waiting for a
// token, and asserting that none comes. The test files of the packages
// built on poll (channel, signal, child, timer, internal/onpoll/ureg) share them. It is separate from internal/testsupport because
// poll's own tests use that package, and poll cannot be imported there.
package polltest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/poll"
)

// TB is what the helpers need of a test: testing.TB, or anything that can
// fail one.
type TB interface {
	require.TestingT
	Helper()
}

// New opens a Poll (poll.New, so on the backend UNIPOLL_BACKEND names) and
// closes it at the test's cleanup.
func New(t testing.TB) *poll.Poll {
	t.Helper()
	p, err := poll.New()
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// PollOnce makes one Poll call with the timeout and returns what it
// reported, by token; it fails the test on a token reported twice in the
// call (rule 1 of the contract).
func PollOnce(t TB, p *poll.Poll, timeout time.Duration) map[poll.Token]poll.Ready {
	t.Helper()
	ev := poll.NewEvents(64)
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

// WaitEvent polls until tok is reported and returns its readiness; it
// fails the test if that takes longer than within.
func WaitEvent(t TB, p *poll.Poll, tok poll.Token, within time.Duration) poll.Ready {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if r, ok := PollOnce(t, p, time.Until(deadline))[tok]; ok {
			return r
		}
	}
	require.FailNow(t, "no event", "token %d not reported within %v", tok, within)
	return 0
}

// ExpectNoEvent fails the test if a Poll call that waits quiet reports
// tok.
func ExpectNoEvent(t TB, p *poll.Poll, tok poll.Token, quiet time.Duration) {
	t.Helper()
	r, ok := PollOnce(t, p, quiet)[tok]
	require.False(t, ok, "token %d reported (%s), expected nothing", tok, r)
}

// Waits are a package's two waits, bound to WaitEvent and ExpectNoEvent,
// so that its tests say only the Poll and the token.
type Waits struct {
	Event   time.Duration // how long something that must come may take
	NoEvent time.Duration // how long a Poll call waits to show nothing comes
}

// WaitEvent is WaitEvent within w.Event.
func (w Waits) WaitEvent(t TB, p *poll.Poll, tok poll.Token) poll.Ready {
	t.Helper()
	return WaitEvent(t, p, tok, w.Event)
}

// ExpectNoEvent is ExpectNoEvent for w.NoEvent.
func (w Waits) ExpectNoEvent(t TB, p *poll.Poll, tok poll.Token) {
	t.Helper()
	ExpectNoEvent(t, p, tok, w.NoEvent)
}
