//go:build unix

package signal

import (
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/onpoll/polltest"
	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/poll"
)

// storm sends n signals to the process as fast as kill(2) goes, while two
// Watchers on two Polls consume them, one edge-triggered and one
// level-triggered, taking signals only after an event (as a consumer
// must). Afterwards, until a deadline: both Watchers see at least one
// delivery; every count a Watcher holds is followed by an event (Pending
// reaches 0 through events alone, so no count is left without its
// notification); the two Watchers end up with the same total (they see the
// same deliveries); and no total exceeds n. Nothing here assumes when the
// runtime is done delivering: a loaded machine may take a while.
func storm(t *testing.T, n int) {
	p1, p2 := polltest.New(t), polltest.New(t)
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
	consume := func(i int, p *poll.Poll, w *Watcher, timeout time.Duration) {
		if len(pollOnce(t, p, timeout)) == 0 {
			return
		}
		events[i]++
		for _, c := range w.Drain() {
			totals[i] += c
		}
	}
	both := func(timeout time.Duration) {
		consume(0, p1, w1, timeout)
		consume(1, p2, w2, timeout)
	}
	for done := false; !done; {
		select {
		case err := <-sent:
			require.NoError(t, err)
			done = true
		default:
		}
		both(time.Millisecond)
	}
	testsupport.WaitFor(t, "every delivery notified, and the same deliveries seen by both Watchers", func() bool {
		both(time.Millisecond)
		return totals[0] >= 1 && totals[0] == totals[1] && w1.Pending() == 0 && w2.Pending() == 0
	})
	t.Logf("%d signals sent; counted %d (edge Watcher, %d events) and %d (level Watcher, %d events)",
		n, totals[0], events[0], totals[1], events[1])
	for i, c := range totals {
		require.LessOrEqual(t, c, uint64(n), "Watcher %d counted more than was sent", i)
	}
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
