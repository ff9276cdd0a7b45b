//go:build unix

package sys

// The Selector contract's modes (Level, Edge, Oneshot), interests and
// hang-ups, on every selector this build has.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSelectorLevelReportsWhileReady(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := readablePipe(t)
		require.NoError(t, s.Add(p.a, 1, Readable, Level))
		for i := 0; i < 3; i++ {
			ev := waitEvent(t, s, 1)
			require.NotZero(t, ev.Ready&Readable)
		}
		drainFd(t, p.a)
		requireNoEvent(t, s, 1)
	})
}

func TestSelectorEdge(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := newSocketpair(t)
		require.NoError(t, s.Add(p.a, 1, Readable, Edge))
		requireNoEvent(t, s, 1)
		for round := 0; round < 3; round++ {
			writeByte(t, p.b)
			ev := waitEvent(t, s, 1)
			require.NotZero(t, ev.Ready&Readable)
			requireNoEvent(t, s, 1) // not drained, but no new data
			// The documented rule: read until EAGAIN, then re-arm.
			drainFd(t, p.a)
			require.NoError(t, s.Drained(p.a, Readable))
			requireNoEvent(t, s, 1)
		}
	})
}

func TestSelectorOneshot(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := readablePipe(t)
		require.NoError(t, s.Add(p.a, 1, Readable, Level|Oneshot))
		require.NotZero(t, waitEvent(t, s, 1).Ready&Readable)
		requireNoEvent(t, s, 1)
		writeByte(t, p.b)
		requireNoEvent(t, s, 1) // disarmed, even with new data

		require.NoError(t, s.Modify(p.a, 1, Readable, Level|Oneshot))
		require.NotZero(t, waitEvent(t, s, 1).Ready&Readable)
		requireNoEvent(t, s, 1)

		// Modify can also turn it into a plain level registration.
		require.NoError(t, s.Modify(p.a, 2, Readable, Level))
		waitEvent(t, s, 2)
		waitEvent(t, s, 2)
	})
}

// A oneshot registration for Readable|Writable on a descriptor that is both
// makes one event, which carries both (kqueue merges its two filters), and
// then nothing until Modify: no Select reports the key twice, and no
// second event comes from the other filter.
func TestSelectorOneshotBothFiltersOneEvent(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := newSocketpair(t)
		writeByte(t, p.b) // a is readable and writable
		require.NoError(t, s.Add(p.a, 1, Readable|Writable, Edge|Oneshot))
		limit := time.Now().Add(5 * time.Second)
		var got []Event
		for len(got) == 0 && time.Now().Before(limit) {
			for _, ev := range selectEvents(t, s, 16, time.Until(limit)) {
				if ev.Key == 1 {
					got = append(got, ev)
				}
			}
		}
		require.Len(t, got, 1, "one key, one event")
		require.Equal(t, Readable|Writable, got[0].Ready&(Readable|Writable))
		requireNoEvent(t, s, 1)
		writeByte(t, p.b)
		requireNoEvent(t, s, 1)
	})
}

// A oneshot registration makes one event whichever condition comes first,
// and the other one, arriving later, makes none until Modify: on kqueue
// that is a filter of its own, still in the kernel after the first fired,
// which the selector itself must keep from reporting.
func TestSelectorOneshotLaterCondition(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := newSocketpair(t)
		fillFd(t, p.a)    // a is not writable
		writeByte(t, p.b) // a is readable
		require.NoError(t, s.Add(p.a, 1, Readable|Writable, Level|Oneshot))
		ev := waitEvent(t, s, 1)
		require.Equal(t, Readable, ev.Ready&(Readable|Writable))
		drainFd(t, p.b) // now a is writable as well
		requireNoEvent(t, s, 1)
		requireNoEvent(t, s, 1)

		require.NoError(t, s.Modify(p.a, 1, Readable|Writable, Level|Oneshot))
		ev = waitEvent(t, s, 1)
		require.Equal(t, Readable|Writable, ev.Ready&(Readable|Writable))
		requireNoEvent(t, s, 1)
	})
}

func TestSelectorReadWriteMerge(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := newSocketpair(t)
		writeByte(t, p.b)
		require.NoError(t, s.Add(p.a, 9, Readable|Writable, Level))
		// Level: both stay ready, so some Select reports both at once, and
		// none reports the key twice.
		limit := time.Now().Add(5 * time.Second)
		for time.Now().Before(limit) {
			evs := selectEvents(t, s, 16, time.Until(limit))
			require.LessOrEqual(t, len(evs), 1)
			if len(evs) == 1 && evs[0].Ready&(Readable|Writable) == Readable|Writable {
				return
			}
		}
		t.Fatal("readable and writable never reported together")
	})
}

func TestSelectorDelete(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := readablePipe(t)
		require.NoError(t, s.Add(p.a, 1, Readable, Level))
		waitEvent(t, s, 1)
		require.NoError(t, s.Delete(p.a))
		requireNoEvent(t, s, 1)
		require.Error(t, s.Delete(p.a))
		require.Error(t, s.Modify(p.a, 1, Readable, Level))
		// It can be added again.
		require.NoError(t, s.Add(p.a, 2, Readable, Level))
		waitEvent(t, s, 2)
	})
}

func TestSelectorModifyChangesKeyAndInterest(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := readablePipe(t)
		// A pipe's read end is never writable.
		require.NoError(t, s.Add(p.a, 1, Writable, Level))
		requireNoEvent(t, s, 1)
		require.NoError(t, s.Modify(p.a, 2, Readable, Level))
		waitEvent(t, s, 2)
		evs := selectEvents(t, s, 16, quiet)
		_, ok := eventFor(evs, 1)
		require.False(t, ok, "old key reported after Modify: %v", evs)
	})
}

func TestSelectorInterestWritableOnly(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := newSocketpair(t)
		writeByte(t, p.b) // a is readable too
		require.NoError(t, s.Add(p.a, 1, Writable, Level))
		for i := 0; i < 3; i++ {
			ev := waitEvent(t, s, 1)
			require.NotZero(t, ev.Ready&Writable)
			require.Zero(t, ev.Ready&Readable, "Readable reported without interest")
		}
	})
}

func TestSelectorHup(t *testing.T) {
	for _, c := range []struct {
		name string
		open func(*testing.T) *fdPair
		mode Mode
	}{{"socketpair", newSocketpair, Level}, {"pipe", newPipe, Edge}} {
		t.Run(c.name, func(t *testing.T) {
			forEachSelector(t, func(t *testing.T, s Selector) {
				p := c.open(t)
				require.NoError(t, s.Add(p.a, 1, Readable, c.mode))
				requireNoEvent(t, s, 1)
				p.closeB(t)
				require.NotZero(t, waitEvent(t, s, 1).Ready&Hup)
			})
		})
	}
}
