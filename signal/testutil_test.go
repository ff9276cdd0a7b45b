//go:build unix

package signal

// Helpers for this package's tests. Polls are real (poll.New, so the backend
// is the one UNIPOLL_BACKEND names) and signals are real: the tests send
// them to the test process itself with kill(2). They use only SIGUSR1,
// SIGUSR2 and SIGWINCH, which the Go runtime catches and ignores when nobody
// asked for them, so a failing test cannot kill the test binary; signals
// that end a process (SIGTERM) are sent only to re-executed helpers. Waiting is for a condition with a deadline, never
// time.Sleep.

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/onpoll/polltest"
)

const (
	noEventWait = 20 * time.Millisecond
	eventWait   = 5 * time.Second
)

func newWatcher(t testing.TB, sigs ...os.Signal) *Watcher {
	t.Helper()
	w, err := New(sigs...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close() })
	return w
}

// raise sends sig to the test process.
func raise(t testing.TB, sig syscall.Signal) {
	t.Helper()
	require.NoError(t, syscall.Kill(syscall.Getpid(), sig))
}

// pollOnce, waitEvent and expectNoEvent are internal/onpoll/polltest's,
// with this package's waits.
var (
	waits         = polltest.Waits{Event: eventWait, NoEvent: noEventWait}
	pollOnce      = polltest.PollOnce
	waitEvent     = waits.WaitEvent
	expectNoEvent = waits.ExpectNoEvent
)
