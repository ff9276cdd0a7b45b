//go:build linux

package sys

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// closeCancels opens a uring selector with one idle registration, runs a
// Select first if selected, and reports whether Close cancelled requests
// in the ring (cancelAllLocked), logging how long Close took.
func closeCancels(t *testing.T, selected bool) bool {
	t.Helper()
	if !slices.Contains(Backends(), BackendUring) {
		t.Skip("io_uring missing or refused on this kernel")
	}
	sel, err := openUringSized(uringSQEntries, uringCQEntries)
	require.NoError(t, err)
	s := sel.(*uringSelector)
	p := newSocketpair(t)
	require.NoError(t, s.Add(p.a, 1, Readable, Level))
	if selected {
		require.Empty(t, selectEvents(t, s, 4, 0), "nothing is ready")
	}
	cancelled := false
	s.testCancelsAll = func() { cancelled = true }
	start := time.Now()
	require.NoError(t, s.Close())
	t.Logf("Select first %v: Close took %v", selected, time.Since(start))
	return cancelled
}

// A ring that never submitted anything has no request to cancel: Close
// submits nothing (the queued poll and the waker's go with the ring),
// which would only arm requests for the kernel's teardown to wait for.
func TestUringCloseUnsubmittedSubmitsNothing(t *testing.T) {
	require.False(t, closeCancels(t, false))
}

// Once a Select has submitted requests, Close cancels them.
func TestUringCloseCancelsSubmitted(t *testing.T) {
	require.True(t, closeCancels(t, true))
}
