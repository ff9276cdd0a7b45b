//go:build unix

package sys

// One Select call: its timeout, its buffer, fairness across descriptors,
// and registration changes made while it is blocked.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSelectorSubMillisecondTimeout(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		const d = 200 * time.Microsecond
		buf := make([]Event, 4)
		start := time.Now()
		n, woken, err := s.Select(buf, d)
		require.NoError(t, err)
		require.GreaterOrEqual(t, time.Since(start), d)
		require.Zero(t, n)
		require.False(t, woken)

		// No busy loop: each call really waits.
		start = time.Now()
		for i := 0; i < 100; i++ {
			_, _, err := s.Select(buf, d)
			require.NoError(t, err)
		}
		require.GreaterOrEqual(t, time.Since(start), 100*d)
	})
}

func TestSelectorZeroTimeoutDoesNotBlock(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := newPipe(t)
		require.NoError(t, s.Add(p.a, 1, Readable, Level))
		done := make(chan error, 1)
		go func() {
			_, _, err := s.Select(make([]Event, 4), 0)
			done <- err
		}()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(5 * time.Second):
			require.NoError(t, s.Wake())
			t.Fatal("Select with zero timeout blocked")
		}
	})
}

func TestSelectorEmptyBuffer(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		_, _, err := s.Select(nil, 0)
		require.ErrorIs(t, err, ErrEmptyBuffer)
		_, _, err = s.Select([]Event{}, -1)
		require.ErrorIs(t, err, ErrEmptyBuffer)
	})
}

func TestSelectorFairness(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		const fds, room = 10, 3
		for i := 0; i < fds; i++ {
			p := readablePipe(t)
			require.NoError(t, s.Add(p.a, uint64(100+i), Readable, Level))
		}
		seen := map[uint64]int{}
		for i := 0; i < 4; i++ { // 4*3 slots for 10 ready descriptors
			evs := selectEvents(t, s, room, time.Second)
			require.Len(t, evs, room, "never more than fits, never fewer than ready")
			for _, ev := range evs {
				seen[ev.Key]++
			}
		}
		require.Len(t, seen, fds, "a ready descriptor starved: %v", seen)
	})
}

func TestSelectorAddWhileBlocked(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := readablePipe(t)
		done := blockedSelect(t, s)
		require.NoError(t, s.Add(p.a, 3, Readable, Level))
		r := await(t, s, done)
		require.NoError(t, r.err)
		require.False(t, r.woken, "a registration change is not a Wake")
		ev, ok := eventFor(r.evs, 3)
		require.True(t, ok, "the blocked Select did not report the new descriptor: %v", r.evs)
		require.NotZero(t, ev.Ready&Readable)

		// The gate is not left pending: a real Wake still writes and wakes.
		_ = s.Delete(p.a)
		require.NoError(t, s.Wake())
		_, woken, err := s.Select(make([]Event, 4), time.Second)
		require.NoError(t, err)
		require.True(t, woken)
	})
}

func TestSelectorModifyWhileBlocked(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := readablePipe(t)
		require.NoError(t, s.Add(p.a, 1, Writable, Level)) // never fires
		done := blockedSelect(t, s)
		require.NoError(t, s.Modify(p.a, 2, Readable, Level))
		r := await(t, s, done)
		require.NoError(t, r.err)
		require.False(t, r.woken)
		_, ok := eventFor(r.evs, 2)
		require.True(t, ok, "Modify did not reach the blocked Select: %v", r.evs)
	})
}
