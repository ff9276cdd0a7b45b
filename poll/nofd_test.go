package poll

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A Poll with no descriptor registered does not ask the kernel when it will
// not block: Poll(ev, 0) over Registrations alone makes no system call. The
// first descriptor registered is asked about at once (rule 5), and once the
// last is deregistered the kernel is left alone again.
func TestPollWithoutDescriptorsSkipsSelector(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		p := newPoll(t)
		_, set := newRegistered(t, p, 1, Readable, Level)
		require.NoError(t, set.SetReadiness(Readable))
		ev := NewEvents(4)

		before := p.Stats()
		for range 3 {
			require.Equal(t, []Event{{Token: 1, Ready: Readable}}, pollEvents(t, p, ev, 0))
		}
		after := p.Stats()
		require.Equal(t, before.Selects, after.Selects, "Poll(0) with no descriptor entered the selector")
		require.Equal(t, before.KernelWaits, after.KernelWaits, "Poll(0) with no descriptor made a kernel wait")

		a, b := socketPair(t)
		writeFd(t, b, []byte("x"))
		waitKernelReady(t, a, unix.POLLIN)
		require.NoError(t, p.Register(Fd(a), 2, Readable, Level))
		evs := pollEvents(t, p, ev, 0)
		require.ElementsMatch(t, []Event{{Token: 1, Ready: Readable}, {Token: 2, Ready: Readable}}, evs,
			"the first descriptor registered must be reported by the next Poll(0)")
		require.Greater(t, p.Stats().Selects, after.Selects)

		require.NoError(t, p.Deregister(Fd(a)))
		mid := p.Stats()
		require.Equal(t, []Event{{Token: 1, Ready: Readable}}, pollEvents(t, p, ev, 0))
		require.Equal(t, mid.Selects, p.Stats().Selects, "Poll(0) entered the selector after the last descriptor left")
	})
}

// Skipping the kernel never costs a wake-up. A Poll blocked with no
// descriptor is woken by SetReadiness through the waker; Poll(0) calls in
// between, which skip the kernel, leave any wake-up written for a sleep that
// ended otherwise in the waker, and the next blocking Poll drains it without
// losing the readiness that follows.
func TestPollWithoutDescriptorsWakes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newPoll newPollFunc) {
		p := newPoll(t)
		_, set := newRegistered(t, p, 1, Readable, Edge)
		ev := NewEvents(4)
		for i := range 20 {
			got := make(chan []Event, 1)
			before := p.Stats().Selects
			go func() {
				evs := make([]Event, 0, 4)
				if _, err := p.Poll(ev, -1); err == nil {
					for e := range ev.All() {
						evs = append(evs, e)
					}
				}
				got <- evs
			}()
			waitSelecting(t, p, before)
			require.NoError(t, set.SetReadiness(Readable))
			select {
			case evs := <-got:
				require.Equal(t, []Event{{Token: 1, Ready: Readable}}, evs, "round %d", i)
			case <-time.After(eventWait):
				require.FailNow(t, "a blocked Poll with no descriptor was not woken", "round %d", i)
			}
			require.NoError(t, set.SetReadiness(0))
			require.Empty(t, pollEvents(t, p, ev, 0), "round %d", i)
		}
	})
}
