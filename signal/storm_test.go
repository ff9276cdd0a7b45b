//go:build unix

package signal

import (
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/poll"
)

// storm sends n signals to the process as fast as kill(2) goes, while two
// Watchers on two Polls consume them, one edge-triggered and one
// level-triggered. When the storm is over and the Polls have gone quiet,
// every count a Watcher saw has been notified and taken (Pending is 0: no
// count was left without its event), the totals are at least 1 and at
// most n, and the two Watchers saw the same deliveries.
func storm(t *testing.T, n int) {
	p1, p2 := newPoll(t), newPoll(t)
	w1, w2 := newWatcher(t, syscall.SIGUSR1), newWatcher(t, syscall.SIGUSR1)
	require.NoError(t, p1.Register(w1, 1, poll.Readable, poll.Edge))
	require.NoError(t, p2.Register(w2, 2, poll.Readable, poll.Level))

	sent := make(chan error, 1)
	go func() {
		pid := syscall.Getpid()
		for range n {
			if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	var totals [2]uint64
	var events [2]int
	consume := func(i int, p *poll.Poll, w *Watcher, timeout time.Duration) int {
		got := pollOnce(t, p, timeout)
		if len(got) > 0 {
			events[i]++
		}
		for _, c := range w.Drain() {
			totals[i] += c
		}
		return len(got)
	}
	done := false
	for !done {
		select {
		case err := <-sent:
			require.NoError(t, err)
			done = true
		default:
		}
		consume(0, p1, w1, time.Millisecond)
		consume(1, p2, w2, 0)
	}
	// The storm is over; poll until neither Poll reports anything for a
	// while. A count left without readiness would stay in Pending.
	for quiet := 0; quiet < 3; {
		if consume(0, p1, w1, 50*time.Millisecond)+consume(1, p2, w2, 50*time.Millisecond) == 0 {
			quiet++
		} else {
			quiet = 0
		}
	}
	t.Logf("%d signals sent; counted %d (edge Watcher, %d events) and %d (level Watcher, %d events)",
		n, totals[0], events[0], totals[1], events[1])
	require.Zero(t, w1.Pending(), "edge Watcher: deliveries counted but never notified")
	require.Zero(t, w2.Pending(), "level Watcher: deliveries counted but never notified")
	for i, c := range totals {
		require.GreaterOrEqual(t, c, uint64(1), "Watcher %d saw nothing", i)
		require.LessOrEqual(t, c, uint64(n), "Watcher %d counted more than was sent", i)
		require.GreaterOrEqual(t, events[i], 1)
	}
	require.Equal(t, totals[0], totals[1], "two Watchers of one signal saw different deliveries")
}

func TestStorm(t *testing.T) { storm(t, 10_000) }

// TestStormMemory: 100,000 signals leave the heap where it was (counts, not
// queues). The bound is loose on purpose: the test is about growth with the
// number of signals, which a queue of values would make megabytes.
func TestStormMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 100,000 signals")
	}
	// Warm up: the relay, os/signal and the Polls allocate once.
	storm(t, 100)
	before := heapInUse()
	storm(t, 100_000)
	after := heapInUse()
	t.Logf("heap in use: %d bytes before, %d after a 100,000-signal storm (%+d)", before, after, int64(after)-int64(before))
	require.Less(t, int64(after)-int64(before), int64(256<<10), "heap grew with the storm")
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}
