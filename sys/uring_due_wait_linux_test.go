//go:build linux

package sys

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A Drained on another goroutine that makes a held condition due after the
// Select's last look, just before it waits: the Select reports it at once.
// Drained nudges only a blocked Select, and before blockUnlessDue this one
// waited out its timeout with the condition in the due list (found by
// review).
func TestUringDrainedBeforeWaitReported(t *testing.T) {
	s := openUringOrSkip(t, uringSQEntries, uringCQEntries)
	p := newPipe(t)
	require.NoError(t, s.Add(p.a, 1, Readable, Edge))
	_, err := unix.Write(p.b, []byte("x"))
	require.NoError(t, err)
	ev := waitEvent(t, s, 1)
	require.NotZero(t, ev.Ready&Readable)
	// Not read, and a second byte comes while Readable is quiet: the
	// wake-up is held, and a Drained makes Readable due again. A look
	// harvests the wake-up first (it reports nothing: quiet). The caller
	// then says Drained from another goroutine, in the gap.
	_, err = unix.Write(p.b, []byte("y"))
	require.NoError(t, err)
	require.Empty(t, selectEvents(t, s, 16, 0), "reported while quiet")
	hooked := false
	s.testBeforeWait = func() {
		if hooked {
			return
		}
		hooked = true
		done := make(chan error, 1)
		go func() { done <- s.Drained(p.a, Readable) }()
		require.NoError(t, <-done)
	}
	evs := selectSoon(t, s, "the Select waited out its timeout with Readable due")
	require.True(t, hooked, "the Select never came to wait: the test tests nothing")
	require.Len(t, evs, 1)
	require.Equal(t, uint64(1), evs[0].Key)
	require.NotZero(t, evs[0].Ready&Readable)
}

// selectSoon selects with a timeout of 10 s and fails the test unless the
// Select returned within half of it: a Select that misses what the test
// made ready waits the whole timeout, one that sees it a moment, and half
// is room for any machine.
func selectSoon(t *testing.T, s Selector, missed string) []Event {
	t.Helper()
	const timeout = 10 * time.Second
	start := time.Now()
	evs := selectEvents(t, s, 16, timeout)
	require.Less(t, time.Since(start), timeout/2, missed)
	return evs
}
