package netloop

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/eventloop"
)

// held is a Conn's handler whose first call waits to be released: while
// it waits, its Conn runs on one worker and the others poll and take the
// rest.
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

func (h *held) Data(c *Conn, in []byte) int { h.call(); return len(in) }

// waitClosed waits for ch to be closed, at most waitLimit.
func waitClosed(t *testing.T, ch chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitLimit):
		t.Fatalf("waited %v for %s", waitLimit, what)
	}
}

// A Conn's Async or its input, coming while its handler runs on one
// worker, is taken by another worker's Poll, which finds the Conn's entry
// running: the call it asks for comes once the running one has returned,
// never beside it. The handler's first call is held while the trigger
// comes from outside and a posted function runs (it runs after the Poll
// that took the trigger, on a worker other than the held one); then it is
// released, and a second call must follow. (eventloop's test does the
// same for a Trigger and an event.)
func TestConnTriggerWhileRunningElsewhere(t *testing.T) {
	for _, workers := range []int{2, 4} {
		for _, how := range []string{"Conn.Async", "Conn input"} {
			t.Run(fmt.Sprintf("%s/%d workers", how, workers), func(t *testing.T) {
				l := newLoop(t, eventloop.Config{Workers: workers})
				start(t, l, nil)
				h := newHeld()
				s, client := clientPair(t)
				c, err := Add(l, s, h, Config{})
				require.NoError(t, err)
				_, err = client.Write([]byte("a"))
				require.NoError(t, err)
				trigger := func() {
					_, err := client.Write([]byte("b"))
					require.NoError(t, err)
				}
				if how == "Conn.Async" {
					trigger = func() { require.NoError(t, c.Async(func(*Conn) { h.call() })) }
				}
				waitClosed(t, h.entered, "the first call")
				trigger()
				posted := make(chan struct{})
				require.NoError(t, l.Post(func(*eventloop.Loop) { close(posted) }))
				waitClosed(t, posted, "a posted function while the first call is held")
				require.Equal(t, int32(1), h.calls.Load(), "a call began while the first was held")
				close(h.release)
				eventually(t, "a call after the trigger", func() bool { return h.calls.Load() >= 2 })
				require.False(t, h.overlap.Load(), "two calls at once")
			})
		}
	}
}
