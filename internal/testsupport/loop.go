package testsupport

// Helpers for the tests of a loop that runs in a goroutine of its own
// (eventloop's Loop, and netloop's tests of Conns on it). They take the
// loop's calls as functions, so that this package imports nothing of ours
// and eventloop's own tests may use it.

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Running is a run of a loop in another goroutine.
type Running struct {
	done   chan error
	cancel context.CancelFunc
	within time.Duration
}

// StartRun calls run in a goroutine with a context that Stop (or the
// test's end) cancels; Stop then waits for run to return, at most within.
func StartRun(t testing.TB, within time.Duration, run func(context.Context) error) *Running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &Running{done: make(chan error, 1), cancel: cancel, within: within}
	go func() { r.done <- run(ctx) }()
	t.Cleanup(func() { _ = r.Stop(t) })
	return r
}

// Stop cancels the run's context and returns what run returned, nil for
// context.Canceled; later calls return nil. It fails t if run does not
// return within StartRun's limit.
func (r *Running) Stop(t testing.TB) error {
	t.Helper()
	if r.done == nil {
		return nil
	}
	r.cancel()
	select {
	case err := <-r.done:
		r.done = nil
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	case <-time.After(r.within):
		t.Fatalf("Run did not return within %v of its context's end", r.within)
		return nil
	}
}

// Quiesce lets a running loop go through three more iterations, so that
// an event that should not come would have come: iterations counts them,
// and wake makes the loop go round (a posted function that does nothing).
func Quiesce(t testing.TB, within time.Duration, iterations func() uint64, wake func()) {
	t.Helper()
	before := iterations()
	WaitForWithin(t, within, "three iterations", func() bool {
		wake()
		return iterations() >= before+3
	})
}

// Pipe returns a non-blocking, close-on-exec pipe's two descriptors; the
// caller closes them. (pipe then fcntl, not pipe2, which darwin lacks; the
// tests start no process that could inherit them meanwhile.)
func Pipe(t testing.TB) (r, w int) {
	t.Helper()
	var p [2]int
	require.NoError(t, unix.Pipe(p[:]))
	for _, fd := range p {
		unix.CloseOnExec(fd)
		require.NoError(t, unix.SetNonblock(fd, true))
	}
	return p[0], p[1]
}

// Held is the body of a handler whose first call waits to be released:
// while it waits, its source runs on one worker of a loop, and the other
// workers poll and take the rest. It counts the calls and notes two at
// once.
type Held struct {
	entered chan struct{} // closed once the first call has begun
	release chan struct{} // closed by the test to end the first call
	inside  atomic.Int32
	calls   atomic.Int32
	overlap atomic.Bool
}

// NewHeld returns a Held whose first call has not come.
func NewHeld() *Held {
	return &Held{entered: make(chan struct{}), release: make(chan struct{})}
}

// Call is the body of every call of the handler.
func (h *Held) Call() {
	if h.inside.Add(1) > 1 {
		h.overlap.Store(true)
	}
	if h.calls.Add(1) == 1 {
		close(h.entered)
		<-h.release
	}
	h.inside.Add(-1)
}

// CheckTriggerWhileHeld waits for the first call, calls trigger while it
// is held, and has post run a function (which post hands to the loop)
// that must run meanwhile; no second call may begin yet. Then it releases
// the first call, and a second must follow, never beside another. Each
// wait is at most within.
func (h *Held) CheckTriggerWhileHeld(t *testing.T, within time.Duration, trigger func(), post func(func()) error) {
	t.Helper()
	WaitClosed(t, within, h.entered, "the first call")
	trigger()
	posted := make(chan struct{})
	require.NoError(t, post(func() { close(posted) }))
	WaitClosed(t, within, posted, "a posted function while the first call is held")
	require.Equal(t, int32(1), h.calls.Load(), "a call began while the first was held")
	close(h.release)
	WaitForWithin(t, within, "a call after the trigger", func() bool { return h.calls.Load() >= 2 })
	require.False(t, h.overlap.Load(), "two calls at once")
}

// WaitClosed waits for ch to be closed, and fails t if it is not within
// the limit.
func WaitClosed(t testing.TB, within time.Duration, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(within):
		t.Fatalf("waited %v for %s", within, what)
	}
}
