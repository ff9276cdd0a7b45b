package eventloop

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/poll"
)

// SetMode turns an Edge source into a Level one and back: under Edge a
// readiness that stays set brings one call, under Level a call at every
// iteration while it stays set, and under Edge again none until the next
// edge.
func TestSetModeEdgeLevelEdge(t *testing.T) {
	for _, workers := range []int{1, 3} {
		t.Run(fmt.Sprint(workers), func(t *testing.T) {
			l := newLoop(t, Config{Workers: workers})
			src := newRegSource(t)
			rec := &recorder{}
			tok, err := l.Add(src.reg, poll.Readable, poll.Edge, rec)
			require.NoError(t, err)
			start(t, l, nil)
			require.NoError(t, src.set.SetReadiness(poll.Readable))
			eventually(t, "the edge's call", func() bool { return rec.count() == 1 })
			quiesce(t, l)
			require.Equal(t, 1, rec.count(), "Edge called twice for one edge")

			require.NoError(t, l.SetMode(tok, poll.Readable, poll.Level))
			eventually(t, "calls at every look under Level", func() bool { return rec.count() > 10 })

			require.NoError(t, l.SetMode(tok, poll.Readable, poll.Edge))
			// Events the Poll reported under Level before SetMode still
			// bring calls: a worker may hold one in its batch while the
			// others go round several times. A Level left on would call
			// at every iteration, so the count must stop moving.
			settled := func(what string) int {
				var n int
				eventually(t, what, func() bool {
					n = rec.count()
					quiesce(t, l)
					return rec.count() == n && rec.inside.Load() == 0
				})
				return n
			}
			n := settled("no more calls under Edge")
			require.NoError(t, src.set.SetReadiness(poll.Readable))
			eventually(t, "the new edge's call", func() bool { return rec.count() > n })
			// One call for the edge, and at most one late Level event
			// from each of the other workers' batches.
			got := settled("one call for the new edge") - n
			require.True(t, got >= 1 && got <= workers, "%d calls for one edge with %d workers", got, workers)
			rec.check(t)
		})
	}
}

// SetMode refuses Oneshot either way (the Loop manages a Oneshot source's
// arming) and an unknown token, and leaves the source as it was.
func TestSetModeRefuses(t *testing.T) {
	l := newLoop(t, Config{})
	src, one := newRegSource(t), newRegSource(t)
	rec := &recorder{}
	tok, err := l.Add(src.reg, poll.Readable, poll.Edge, rec)
	require.NoError(t, err)
	oneTok, err := l.Add(one.reg, poll.Readable, poll.Oneshot, &recorder{})
	require.NoError(t, err)
	require.ErrorIs(t, l.SetMode(tok, poll.Readable, poll.Oneshot), ErrInvalidArgument)
	require.ErrorIs(t, l.SetMode(oneTok, poll.Readable, poll.Level), ErrInvalidArgument)
	err = l.SetMode(poll.Token(12345), poll.Readable, poll.Level)
	require.True(t, errors.Is(err, ErrUnknownToken), "%v", err)
	var nilLoop *Loop
	require.Error(t, nilLoop.SetMode(tok, poll.Readable, poll.Level))
	start(t, l, nil)
	require.NoError(t, src.set.SetReadiness(poll.Readable))
	eventually(t, "the edge's call", func() bool { return rec.count() == 1 })
	quiesce(t, l)
	require.Equal(t, 1, rec.count(), "the refused SetMode changed the mode")
}
