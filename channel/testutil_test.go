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

	"github.com/unipoll/unipoll/internal/onpoll/polltest"
	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/poll"
)

const (
	noEventWait = testsupport.NoEventWait
	eventWait   = testsupport.EventWait
)

// pollOnce, waitEvent and expectNoEvent are internal/onpoll/polltest's, with this
// package's waits.
func pollOnce(t testing.TB, p *poll.Poll, timeout time.Duration) map[poll.Token]poll.Ready {
	t.Helper()
	return polltest.PollOnce(t, p, timeout)
}

func waitEvent(t testing.TB, p *poll.Poll, tok poll.Token) poll.Ready {
	t.Helper()
	return polltest.WaitEvent(t, p, tok, eventWait)
}

func expectNoEvent(t testing.TB, p *poll.Poll, tok poll.Token) {
	t.Helper()
	polltest.ExpectNoEvent(t, p, tok, noEventWait)
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
