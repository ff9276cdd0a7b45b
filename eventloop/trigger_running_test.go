package eventloop

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/poll"
)

// held is a handler whose first call waits to be released
// (testsupport.Held).
type held struct{ *testsupport.Held }

func (h held) Ready(*Loop, poll.Event) Action { h.Call(); return Keep }
func (h held) Removed(*Loop, poll.Token)      {}

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
				h := held{testsupport.NewHeld()}
				src := newRegSource(t)
				tok, err := l.Add(src.reg, poll.Readable, poll.Edge, h)
				require.NoError(t, err)
				require.NoError(t, src.set.SetReadiness(poll.Readable))
				trigger := func() { require.NoError(t, src.set.SetReadiness(poll.Readable)) } // an edge
				if how == "Trigger" {
					trigger = func() { require.NoError(t, l.Trigger(tok)) }
				}
				h.CheckTriggerWhileHeld(t, waitLimit, trigger, func(f func()) error {
					return l.Post(func(*Loop) { f() })
				})
			})
		}
	}
}
