//go:build unipoll_debug

package poll

import (
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Rule 7 in the window between the selector's return and delivery: a kernel
// event harvested under the old interest, delivered after Reregister
// returned, must not be read against the new interest. The kernel was asked
// only for Readable, so the event says Readable; the new interest adds
// Writable, which is ready too. Delivered as it was, it would report
// Readable alone (an incomplete event, found by the property test on the
// poll(2) backend); it is dropped as stale instead, and the kernel reports
// the descriptor afresh: Readable|Writable, under the new token.
//
// Built only with unipoll_debug (as CI's test runs are): the hook that opens
// the window at the right moment exists only there.
func TestFdReregisterBetweenSelectAndDelivery(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		forModes(t, nil, func(t *testing.T, opts PollOpt) {
			p := newPoll(t)
			a, b := socketPair(t)
			writeFd(t, b, []byte("x")) // a is readable, and writable throughout
			waitKernelReady(t, a, unix.POLLIN)
			require.NoError(t, p.Register(Fd(a), 1, Readable, opts))

			fired := 0
			var rereg error
			hook := func(q *Poll) {
				if q != p || fired > 0 {
					return
				}
				fired++
				rereg = q.Reregister(Fd(a), 2, Readable|Writable, opts)
			}
			afterSelect.Store(&hook)
			t.Cleanup(func() { afterSelect.Store(nil) })

			staleBefore := p.Stats().Stale
			ev := NewEvents(4)
			evs := pollUntil(t, p, ev, func(evs []Event) bool { return len(evs) > 0 }, eventWait)
			require.Equal(t, 1, fired, "the hook did not run: no kernel event was harvested")
			require.NoError(t, rereg)
			require.Equal(t, []Event{{Token: 2, Ready: Readable | Writable}}, evs)
			require.Equal(t, uint64(1), p.Stats().Stale-staleBefore, "the event harvested under the old interest was not dropped as stale")
		})
	})
}
