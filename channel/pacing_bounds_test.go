package channel

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Pacing's promises checked from outside the state machine of
// pacing_test.go: with a measured clock, that a pace is bounded in time
// and that a Drain whose producers have stopped returns at once; with the
// queue's own counters, under producers running concurrently, that a
// Drain's first batch and TryRecv never pace, that a Drain returns with
// nothing left to pace for, and that a pace's length stays within
// paceSpin..paceSpinMax iterations.
//
// A measured clock can show a bound only from above, and only as the
// shortest of many tries: a goroutine preempted in the middle of one makes
// it long, never short. Its bounds (paceLimit, returnLimit) are far above
// what a pace costs (about 165 ns to 1.1 us where bench/RESULTS.md was
// measured; the iterations' speed depends on the machine), so they hold on
// a slow or loaded machine and under -race, and fail only when a pace is
// orders of magnitude too long. Whether a receive paced at all, a spin of a
// few hundred nanoseconds against a receive that costs about as much, is
// told by the counters, not the clock.

const (
	// tries is how many times each measured interval is taken; the
	// shortest counts.
	tries = 200
	// paceLimit bounds the shortest pace of the longest length
	// (paceSpinMax), about 1.1 us on the bench machine.
	paceLimit = 50 * time.Microsecond
	// returnLimit bounds the shortest time from a Drain's last value to
	// its return: at most one pace and the look that finds nothing.
	returnLimit = 100 * time.Microsecond
)

// shortest returns the shortest of tries runs of f, each timed; it stops
// early once they have taken a second in all (a bound broken by far).
func shortest(f func()) time.Duration {
	best := time.Duration(1<<63 - 1)
	begin := time.Now()
	for range tries {
		start := time.Now()
		f()
		best = min(best, time.Since(start))
		if time.Since(begin) > time.Second {
			break
		}
	}
	return best
}

// The longest pace takes at most paceLimit, measured: its length in
// iterations is bounded, and so is what one iteration costs.
func TestPaceLengthMeasured(t *testing.T) {
	q := pacedQueue()
	// Grow the spin to its longest: spins after which the producers made
	// several values, fewer than a run of paceNear (TestPaceAdaptsItsLength).
	for range 20 {
		require.True(t, spinsFromSegmentStart(t, q))
		for range 4 {
			q.Push(0)
		}
		popN(t, q, 4)
	}
	pace := func() {
		q.near, q.skip, q.judging = true, 0, false
		q.pace()
	}
	longest := shortest(pace)
	t.Logf("the shortest of up to %d paces of %d iterations took %v (%.2f ns an iteration)",
		tries, q.spin, longest, float64(longest)/float64(q.spin))
	require.LessOrEqual(t, longest, paceLimit, "a pace of the longest length, the shortest of up to %d", tries)
	require.Equal(t, paceSpinMax, q.spin, "the spin grew to its longest, and no longer")
}

// A Drain whose producers have stopped returns at once after the last
// value: at most one pace (bounded) and one look that finds nothing; it
// never waits for values that are not coming. Only Drains that paced
// there count (one whose batch ended with its segment does not pace).
func TestDrainReturnsWhenProducersStop(t *testing.T) {
	tx, rx := New[int]()
	defer rx.Close()
	q := rx.c.q
	q.paced = true
	const burst = 5 // a short run: the Drain catches up, and paces once
	fromLast := time.Duration(1<<63 - 1)
	paced := 0
	begin := time.Now()
	for range tries {
		for i := range burst {
			require.NoError(t, tx.Send(i))
		}
		// No backoff: the Drain paces once it has caught up, after its
		// last value.
		q.wasted, q.skip = 0, 0
		paces := q.paces
		got := 0
		var last time.Time
		for range rx.Drain() {
			got++
			last = time.Now()
		}
		took := time.Since(last)
		require.Equal(t, burst, got)
		require.LessOrEqual(t, q.paces, paces+1, "a Drain paced twice")
		if q.paces == paces+1 {
			paced++
			fromLast = min(fromLast, took)
		}
		if time.Since(begin) > time.Second {
			break
		}
	}
	t.Logf("the shortest time from a Drain's last value to its return, when it paced there: %v (%d Drains paced)", fromLast, paced)
	require.Positive(t, paced, "no Drain paced")
	require.LessOrEqual(t, fromLast, returnLimit, "a Drain's return after its last value and a pace, the shortest of %d", paced)
}

// A producer in another goroutine sends bursts of 1 to 15 values, each
// when the consumer, inside its Drain's loop, asks for it at the last
// value of the one before and waits for it to be sent: so each burst is
// one batch of the Drain, found by a reload that caught up with the
// producer, and the Drain paces before each batch but its first. Checked
// with the queue's own counters, exactly: no Drain's first batch paces, no
// batch paces more than once or between its values, every pace's length
// stays within paceSpin..paceSpinMax iterations, a Drain returns with
// nothing left to pace for, and TryRecv never paces.
func TestPaceBetweenBatches(t *testing.T) {
	const bursts = 400
	tx, rx := New[int]()
	defer rx.Close()
	q := rx.c.q
	q.paced = true
	ask := make(chan int)
	sent := make(chan struct{}, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer tx.Close()
		v := 0
		for k := range ask {
			for range k {
				if tx.Send(v) != nil {
					return
				}
				v++
			}
			sent <- struct{}{}
		}
	}()
	defer wg.Wait()
	// Runs first, on failure too: the producer returns.
	defer close(ask)
	size := func(b int) int { return 1 + b*7%15 } // burst b's size
	send := func(b int) {
		ask <- size(b)
		<-sent
	}

	send(0)
	next, burst, inBurst, drains := 0, 0, 0, 0
	for burst < bursts {
		paces := q.paces
		first := true
		for v := range rx.Drain() {
			require.Equal(t, next, v)
			next++
			switch {
			case first:
				require.Equal(t, paces, q.paces, "a Drain's first batch paced")
			case inBurst == 0:
				require.LessOrEqual(t, q.paces, paces+1, "a batch paced more than once")
			default:
				require.Equal(t, paces, q.paces, "a pace between the values of one batch")
			}
			paces, first = q.paces, false
			if q.paces > 0 {
				require.GreaterOrEqual(t, q.spin, paceSpin)
				require.LessOrEqual(t, q.spin, paceSpinMax)
			}
			inBurst++
			if inBurst < size(burst) {
				continue
			}
			inBurst = 0
			burst++
			if burst == bursts {
				break
			}
			if burst%10 == 0 {
				break // the next Drain gets the next burst
			}
			send(burst)
		}
		drains++
		require.False(t, q.near, "a Drain returned with something to pace for")
		paces = q.paces
		_, err := rx.TryRecv()
		require.ErrorIs(t, err, ErrEmpty)
		require.Equal(t, paces, q.paces, "TryRecv paced")
		if burst < bursts {
			send(burst)
		}
	}
	require.Greater(t, q.paces, uint64(bursts/2), "the Drains paced between their batches")
	t.Logf("%d bursts in %d Drains: %d paces, spin %d", bursts, drains, q.paces, q.spin)
}
