package netloop

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/internal/testsupport"
)

// held is a Conn's handler whose first call waits to be released
// (testsupport.Held).
type held struct{ *testsupport.Held }

func (h held) Data(c *Conn, in []byte) int { h.Call(); return len(in) }

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
				h := held{testsupport.NewHeld()}
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
					trigger = func() { require.NoError(t, c.Async(func(*Conn) { h.Call() })) }
				}
				h.CheckTriggerWhileHeld(t, waitLimit, trigger, func(f func()) error {
					return l.Post(func(*eventloop.Loop) { f() })
				})
			})
		}
	}
}
