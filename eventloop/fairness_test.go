package eventloop

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/poll"
)

// floodBound is how many iterations a socket's event may wait behind a
// flood: the one in progress when it arrives, and the next, which polls
// it. One more for slack: the Poll call that returns it may be the one
// after next if the event arrives just after a poll.
const floodBound = 3

// Under a flood of posted functions that never ends (each one posts
// itself again), an always-ready Level source and a handler that always
// asks for Again, a socket's event is still served within floodBound
// iterations, and the level source and the rearming handler get their
// turns every iteration.
func TestFairnessUnderFlood(t *testing.T) {
	l := newLoop(t, Config{MaxDispatchPerIteration: 32})
	var tasks atomic.Int64
	var repost func(*Loop)
	repost = func(l *Loop) {
		tasks.Add(1)
		_ = l.Post(repost)
	}
	for range 1000 {
		require.NoError(t, l.Post(repost))
	}
	level := newRegSource(t)
	require.NoError(t, level.set.SetReadiness(poll.Readable))
	var levelCalls, rearmCalls atomic.Int64
	_, err := l.Add(level.reg, poll.Readable, poll.Level, SourceFunc(func(*Loop, poll.Event) Action {
		levelCalls.Add(1)
		return Keep
	}))
	require.NoError(t, err)
	rearmer := newRegSource(t)
	require.NoError(t, rearmer.set.SetReadiness(poll.Readable))
	_, err = l.Add(rearmer.reg, poll.Readable, poll.Edge, SourceFunc(func(*Loop, poll.Event) Action {
		rearmCalls.Add(1)
		return Again
	}))
	require.NoError(t, err)

	a, b := pair(t)
	served := make(chan uint64, 1)
	_, err = l.Add(a, poll.Readable, poll.Edge, SourceFunc(func(l *Loop, ev poll.Event) Action {
		drain(a)
		served <- l.Stats().Iterations
		return Keep
	}))
	require.NoError(t, err)
	start(t, l, nil)
	eventually(t, "the flood to run", func() bool { return tasks.Load() > 10000 })
	for range 20 {
		_, err := b.Write([]byte("x"))
		require.NoError(t, err)
		// Counted from the iteration after the write: counting from one
		// read before it would also count the iterations the Loop makes
		// while this goroutine waits for a core between the two. (The
		// event may be served before this read: the difference is then
		// negative.)
		after := int64(l.Stats().Iterations)
		at := int64(<-served)
		require.LessOrEqual(t, at-after, int64(floodBound), "the socket waited %d iterations behind the flood", at-after)
	}
	it := l.Stats().Iterations
	// Each iteration does at most 32 units of work, so the flood cannot
	// have run more than 32 per iteration. The queue is served in turn:
	// an iteration that the flood's 32 functions fill is followed by one
	// where the others go first, so the level source and the rearming
	// handler ran at least every other iteration (give or take the ones in
	// progress when the counters were read).
	require.LessOrEqual(t, tasks.Load(), int64(32*(it+1)))
	require.GreaterOrEqual(t, levelCalls.Load(), int64(it/2)-2)
	require.GreaterOrEqual(t, rearmCalls.Load(), int64(it/2)-2)
}

// Functions posted from many goroutines run in each poster's order, every
// one of them once.
func TestPostOrderPerPoster(t *testing.T) {
	l := newLoop(t, Config{})
	const posters, each = 8, 2000
	var got [posters][]int // only the loop appends
	var total atomic.Int64
	start(t, l, nil)
	var wg sync.WaitGroup
	for g := range posters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				require.NoError(t, l.Post(func(*Loop) {
					got[g] = append(got[g], i)
					total.Add(1)
				}))
			}
		}()
	}
	wg.Wait()
	eventually(t, "every posted function", func() bool { return total.Load() == posters*each })
	done := make(chan struct{})
	require.NoError(t, l.Post(func(*Loop) { close(done) })) // orders the reads below after the appends
	<-done
	for g := range posters {
		require.Len(t, got[g], each)
		for i, v := range got[g] {
			require.Equal(t, i, v, "poster %d", g)
		}
	}
	require.Equal(t, uint64(posters*each+1), l.Stats().Tasks)
}

func TestPostErrors(t *testing.T) {
	var zero Loop
	require.ErrorIs(t, zero.Post(func(*Loop) {}), ErrInvalidArgument)
	var nilLoop *Loop
	require.ErrorIs(t, nilLoop.Post(func(*Loop) {}), ErrInvalidArgument)
	l := newLoop(t, Config{})
	require.ErrorIs(t, l.Post(nil), ErrInvalidArgument)
}
