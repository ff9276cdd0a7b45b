package eventloop

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/poll"
)

// held is a handler whose first call waits to be
// released: while it waits, its source runs on one worker and the others
// poll and take the rest.
type held struct {
	entered chan struct{} // closed once the first call has begun
	release chan struct{} // closed by the test to end the first call
	inside  atomic.Int32
	calls   atomic.Int32
	overlap atomic.Bool
}

func newHeld() *held { return &held{entered: make(chan struct{}), release: make(chan struct{})} }

// call is the body of every call.
func (h *held) call() {
	if h.inside.Add(1) > 1 {
		h.overlap.Store(true)
	}
	if h.calls.Add(1) == 1 {
		close(h.entered)
		<-h.release
	}
	h.inside.Add(-1)
}

func (h *held) Ready(*Loop, poll.Event) Action { h.call(); return Keep }
func (h *held) Removed(*Loop, poll.Token)      {}

// waitClosed waits for ch to be closed, at most waitLimit.
func waitClosed(t *testing.T, ch chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitLimit):
		t.Fatalf("waited %v for %s", waitLimit, what)
	}
}

// A Trigger or an edge of a source's readiness, coming while the source's
// handler runs on one worker, is taken by another worker's Poll, which
// finds the entry running (W3): the call it asks for comes once the
// running one has returned, never beside it. The handler's first call is
// held while the trigger comes from outside and a posted function runs
// (it runs after the Poll that took the trigger, on a worker other than
// the held one); then it is released, and a second call must follow.
// (netloop's test does the same for a Conn's Async and input.)
func TestTriggerWhileRunningElsewhere(t *testing.T) {
	for _, workers := range []int{2, 4} {
		for _, how := range []string{"Trigger", "event"} {
			t.Run(fmt.Sprintf("%s/%d workers", how, workers), func(t *testing.T) {
				l := newLoop(t, Config{Workers: workers})
				start(t, l, nil)
				h := newHeld()
				src := newRegSource(t)
				tok, err := l.Add(src.reg, poll.Readable, poll.Edge, h)
				require.NoError(t, err)
				require.NoError(t, src.set.SetReadiness(poll.Readable))
				trigger := func() { require.NoError(t, src.set.SetReadiness(poll.Readable)) } // an edge
				if how == "Trigger" {
					trigger = func() { require.NoError(t, l.Trigger(tok)) }
				}
				waitClosed(t, h.entered, "the first call")
				trigger()
				posted := make(chan struct{})
				require.NoError(t, l.Post(func(*Loop) { close(posted) }))
				waitClosed(t, posted, "a posted function while the first call is held")
				require.Equal(t, int32(1), h.calls.Load(), "a call began while the first was held")
				close(h.release)
				eventually(t, "a call after the trigger", func() bool { return h.calls.Load() >= 2 })
				require.False(t, h.overlap.Load(), "two calls at once")
			})
		}
	}
}
