package poll

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A consumer spinning for Registrations (after a call that reported one)
// still watches its descriptors: data arriving on a socket during the spin
// is reported then, not when the spin gives up. The spin here is a minute
// long, so a Poll that waited it out would miss the deadline by far.
func TestSpinWatchesDescriptors(t *testing.T) {
	for _, name := range backends(t) {
		t.Run(name, func(t *testing.T) {
			p := newPollConfig(t, Config{Backend: name, SpinWait: time.Minute})
			_, set := newRegistered(t, p, 1, Readable, Edge)
			a, b := socketPair(t)
			require.NoError(t, p.Register(Fd(a), 2, Readable, Edge))
			require.NoError(t, set.SetReadiness(Readable))
			ev := NewEvents(4)
			require.Equal(t, []Event{{Token: 1, Ready: Readable}}, pollEvents(t, p, ev, 0)) // the next call spins

			got := make(chan []Event, 1)
			go func() {
				evs := []Event{}
				if _, err := p.Poll(ev, -1); err == nil {
					for e := range ev.All() {
						evs = append(evs, e)
					}
				}
				got <- evs
			}()
			writeFd(t, b, []byte("x"))
			select {
			case evs := <-got:
				require.Equal(t, []Event{{Token: 2, Ready: Readable}}, evs)
			case <-time.After(eventWait):
				require.NoError(t, p.Close())
				<-got
				require.FailNow(t, "socket data went unreported while the Poll spun for Registrations")
			}
		})
	}
}

// What the spin's look at the kernel finds is the pass's look: the pass does
// not ask the kernel again, which would report a level descriptor twice in
// one call (rule 1).
func TestSpinLookIsThePassLook(t *testing.T) {
	for _, name := range backends(t) {
		t.Run(name, func(t *testing.T) {
			p := newPollConfig(t, Config{Backend: name, SpinWait: time.Minute})
			_, set := newRegistered(t, p, 1, Readable, Edge)
			a, b := socketPair(t)
			writeFd(t, b, []byte("x"))
			waitKernelReady(t, a, unix.POLLIN)
			require.NoError(t, p.Register(Fd(a), 2, Readable, Level))
			ev := NewEvents(4)
			for i := range 20 {
				require.NoError(t, set.SetReadiness(Readable))
				require.ElementsMatch(t, []Event{{Token: 1, Ready: Readable}, {Token: 2, Ready: Readable}}, pollEvents(t, p, ev, 0), "round %d", i)
				// The socket stays readable (level); the next call spins
				// for Registrations and finds it with its look.
				require.Equal(t, []Event{{Token: 2, Ready: Readable}}, pollEvents(t, p, ev, -1), "round %d", i)
			}
		})
	}
}
