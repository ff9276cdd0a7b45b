//go:build unix

package sys

// Waking a selector: Wake against a blocked Select, coalescing, no lost
// wake-ups, and the wakers themselves.

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestSelectorWakeInterruptsBlockedSelect(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		started, done := selectAsync(s)
		<-started
		require.NoError(t, s.Wake())
		r := await(t, s, done)
		require.NoError(t, r.err)
		require.True(t, r.woken)
		require.Empty(t, r.evs, "a wake-up is not an event")
	})
}

func TestSelectorWakeCoalesces(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		before := s.Counters().WakerWrites
		for i := 0; i < 1000; i++ {
			require.NoError(t, s.Wake())
		}
		require.Equal(t, before+1, s.Counters().WakerWrites)

		buf := make([]Event, 4)
		n, woken, err := s.Select(buf, 0)
		require.NoError(t, err)
		require.True(t, woken)
		require.Zero(t, n)
		require.Equal(t, before+1, s.Counters().WakerWrites)

		// Consumed: the next Select is not woken, and the next Wake writes.
		n, woken, err = s.Select(buf, 0)
		require.NoError(t, err)
		require.False(t, woken)
		require.Zero(t, n)
		require.NoError(t, s.Wake())
		require.Equal(t, before+2, s.Counters().WakerWrites)
		_, woken, err = s.Select(buf, 0)
		require.NoError(t, err)
		require.True(t, woken)
	})
}

// Ping-pong: every Wake is observed by exactly one Select, also while other
// goroutines change registrations (which nudge the poll backend).
func TestSelectorNoLostWakeups(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		const rounds = 300
		p := newPipe(t) // never written: its registration never fires
		stop := make(chan struct{})
		regErr := make(chan error, 1)
		go func() {
			added := false
			for {
				select {
				case <-stop:
					regErr <- nil
					return
				default:
				}
				var err error
				if added {
					err = s.Delete(p.a)
				} else {
					err = s.Add(p.a, 5, Readable, Level)
				}
				if err != nil {
					regErr <- err
					return
				}
				added = !added
				runtime.Gosched()
			}
		}()
		defer func() {
			close(stop)
			require.NoError(t, <-regErr)
		}()

		woke := make(chan struct{})
		errc := make(chan error, 1)
		go func() {
			buf := make([]Event, 4)
			for i := 0; i < rounds; {
				n, woken, err := s.Select(buf, -1)
				if err != nil {
					errc <- err
					return
				}
				if n != 0 {
					errc <- errors.New("event from a descriptor that was never ready")
					return
				}
				if woken {
					i++
					woke <- struct{}{}
				}
			}
			errc <- nil
		}()
		for i := 0; i < rounds; i++ {
			require.NoError(t, s.Wake())
			select {
			case <-woke:
			case err := <-errc:
				t.Fatalf("round %d: %v", i, err)
			case <-time.After(5 * time.Second):
				t.Fatalf("round %d: wake-up lost", i)
			}
		}
		require.NoError(t, <-errc)
	})
}

func TestSelectorWakeWhileRegistering(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := newPipe(t)
		for i := 0; i < 50; i++ {
			done := blockedSelect(t, s)
			require.NoError(t, s.Add(p.a, 1, Readable, Level))
			require.NoError(t, s.Wake())
			require.NoError(t, s.Delete(p.a))
			r := await(t, s, done)
			require.NoError(t, r.err)
			require.True(t, r.woken, "round %d: Wake lost behind a registration nudge", i)
		}
	})
}

func TestFdWakers(t *testing.T) {
	open := map[string]func() (fdWaker, error){
		"default": newFdWaker,
		"pipe": func() (fdWaker, error) {
			p, err := newPipeWaker()
			if err != nil {
				return nil, err
			}
			return p, nil
		},
	}
	for name, newWaker := range open {
		t.Run(name, func(t *testing.T) {
			w, err := newWaker()
			require.NoError(t, err)
			defer func() { require.NoError(t, w.close()) }()
			require.False(t, fdReadable(t, w.fd()))
			require.NoError(t, w.wake())
			require.NoError(t, w.wake())
			require.True(t, fdReadable(t, w.fd()))
			w.drain()
			require.False(t, fdReadable(t, w.fd()))
			w.drain() // draining an empty waker does not block
			require.False(t, fdReadable(t, w.fd()))

			flags, err := unix.FcntlInt(uintptr(w.fd()), unix.F_GETFD, 0)
			require.NoError(t, err)
			require.NotZero(t, flags&unix.FD_CLOEXEC)
		})
	}
}

// A pipe full of pending wake-ups (EAGAIN) is success, and one drain
// empties it.
func TestPipeWakerFull(t *testing.T) {
	w, err := newPipeWaker()
	require.NoError(t, err)
	defer func() { require.NoError(t, w.close()) }()
	const capacity = 1 << 16 // the largest default pipe buffer among unixes
	for i := 0; i < capacity+10; i++ {
		require.NoError(t, w.wake())
	}
	w.drain()
	require.False(t, fdReadable(t, w.fd()))
}

// A storm of Wake calls racing a Select loop must never leave the waker
// stuck: afterwards one more Wake still ends a blocked Select. (A waker
// drained after its gate was reset could swallow a write that the gate
// still counts as pending, and every later Wake would coalesce into it.)
func TestSelectorWakeStorm(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		var stop atomic.Bool
		exited := make(chan error, 1)
		go func() {
			buf := make([]Event, 4)
			for !stop.Load() {
				if _, _, err := s.Select(buf, -1); err != nil {
					exited <- err
					return
				}
			}
			exited <- nil
		}()
		p := newPipe(t)
		for i := 0; i < 20000; i++ {
			require.NoError(t, s.Wake())
			if i%64 == 0 {
				// Registration changes nudge the poll backend too.
				require.NoError(t, s.Add(p.a, 1, Readable, Level))
				require.NoError(t, s.Delete(p.a))
			}
		}
		stop.Store(true)
		require.NoError(t, s.Wake())
		select {
		case err := <-exited:
			require.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Fatal("Wake after a storm did not end the blocked Select: wake-up lost")
		}
	})
}
