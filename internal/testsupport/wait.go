package testsupport

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	// EventWait is the deadline for something that must happen: generous,
	// because it only matters when the test is about to fail anyway, and
	// the machine may be loaded.
	EventWait = 5 * time.Second
	// NoEventWait is the timeout of a Poll call that shows nothing is
	// reported: long enough for a kernel event already in flight to show,
	// short enough to keep the suites fast.
	NoEventWait = 20 * time.Millisecond
)

// Eventually reports whether cond holds within d. It looks at once, and
// then again and again, yielding the processor between looks
// (runtime.Gosched) so that the goroutines it waits for run even when they
// share its processor. Unlike testify's require.Eventually it looks
// without a ticker and in the calling goroutine, so cond may read state
// that only that goroutine may touch, and a condition that holds for a
// moment is not missed between ticks. Safe from any goroutine; it never
// fails a test itself.
func Eventually(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if !time.Now().Before(deadline) {
			return false
		}
		runtime.Gosched()
	}
	return true
}

// WaitFor waits until cond holds, and fails t (FailNow, so only from the
// test's goroutine) if it does not within EventWait. what names the
// condition in the failure message.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	WaitForWithin(t, EventWait, what, cond)
}

// WaitForWithin is WaitFor with a deadline of the caller's, for a package
// whose waits are longer than EventWait (processes to start, a loop on a
// loaded machine).
func WaitForWithin(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Eventually(within, cond) {
		require.FailNowf(t, "timed out", "waiting %v for %s", within, what)
	}
}
