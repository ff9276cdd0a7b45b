package channel

// Helpers for this package's tests (those several packages share are in
// internal/testsupport). Polls are real: poll.New, so the backend is the one
// UNIPOLL_BACKEND names (CI runs the suite with epoll and with poll).
// Waiting is for a condition with a deadline (testsupport.WaitFor), never
// time.Sleep; a short Poll timeout (noEventWait) is how a test asserts that
// nothing is reported.

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/onpoll/polltest"
	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/poll"
)

const (
	noEventWait = testsupport.NoEventWait
	eventWait   = testsupport.EventWait
)

// pollOnce, waitEvent and expectNoEvent are internal/onpoll/polltest's,
// with this package's waits.
var (
	waits         = polltest.Waits{Event: eventWait, NoEvent: noEventWait}
	pollOnce      = polltest.PollOnce
	waitEvent     = waits.WaitEvent
	expectNoEvent = waits.ExpectNoEvent
)

// watchedRx makes a channel of ints whose Receiver is registered with a
// new Poll under rxTok, for interest in mode; the Receiver is closed at
// the test's end, before the Poll.
func watchedRx(t testing.TB, interest poll.Ready, mode poll.PollOpt) (*poll.Poll, *Sender[int], *Receiver[int]) {
	t.Helper()
	p := polltest.New(t)
	tx, rx := New[int]()
	t.Cleanup(func() { _ = rx.Close() })
	require.NoError(t, p.Register(rx, rxTok, interest, mode))
	return p, tx, rx
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
