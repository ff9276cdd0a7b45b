package eventloop

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/base/prefetch"
	"github.com/unipoll/unipoll/poll"
)

// hinter is a source handler that names its lines ahead (prefetch.Hinter)
// and counts its hints and calls; a call after its Removed is a defect.
type hinter struct {
	far, near, calls atomic.Int32
	gone, late       atomic.Bool
}

func (h *hinter) Ready(*Loop, poll.Event) Action {
	if h.gone.Load() {
		h.late.Store(true)
	}
	h.calls.Add(1)
	return Keep
}

func (h *hinter) Removed(*Loop, poll.Token) { h.gone.Store(true) }

func (h *hinter) PrefetchHint(s prefetch.Stage) {
	if s == prefetch.Far {
		h.far.Add(1)
	} else {
		h.near.Add(1)
	}
}

// addHinters adds n Registrations with hinters, all made Readable before
// the Loop runs, so that its first Poll returns them in large batches.
func addHinters(t *testing.T, l *Loop, n int) []*hinter {
	t.Helper()
	hs := make([]*hinter, n)
	for i := range hs {
		src := newRegSource(t)
		hs[i] = &hinter{}
		_, err := l.Add(src.reg, poll.Readable, poll.Edge, hs[i])
		require.NoError(t, err)
		require.NoError(t, src.set.SetReadiness(poll.Readable))
	}
	return hs
}

func hintTotals(hs []*hinter) (far, near int) {
	for _, h := range hs {
		far += int(h.far.Load())
		near += int(h.near.Load())
	}
	return far, near
}

// A Loop with more than aheadFrom sources asks the handlers of a large
// batch for their lines before their calls, at both stages; every source
// is still called exactly once for its one edge.
func TestAheadHintsLargeLoop(t *testing.T) {
	l := newLoop(t, Config{})
	hs := addHinters(t, l, aheadFrom+100)
	start(t, l, nil)
	eventually(t, "every source called", func() bool {
		for _, h := range hs {
			if h.calls.Load() == 0 {
				return false
			}
		}
		return true
	})
	far, near := hintTotals(hs)
	require.Positive(t, far, "no Far hint in a large batch")
	require.Positive(t, near, "no Near hint in a large batch")
	for _, h := range hs {
		require.EqualValues(t, 1, h.calls.Load(), "one edge, one call")
	}
}

// A small Loop asks for no hints: its sources stay in the cache, where a
// hint only costs.
func TestAheadNoHintsSmallLoop(t *testing.T) {
	l := newLoop(t, Config{})
	hs := addHinters(t, l, 100)
	start(t, l, nil)
	eventually(t, "every source called", func() bool {
		for _, h := range hs {
			if h.calls.Load() == 0 {
				return false
			}
		}
		return true
	})
	far, near := hintTotals(hs)
	require.Zero(t, far+near)
}

// Hints read an entry with no claim while other goroutines remove sources
// and add new ones into the freed entries: under -race this is where a
// torn or unsynchronised read would show, and no handler may be called
// after its Removed.
func TestAheadHintsUnderChurn(t *testing.T) {
	l := newLoop(t, Config{})
	const n = aheadFrom + 200
	type live struct {
		tok poll.Token
		src regSource
		h   *hinter
	}
	var mu sync.Mutex
	all := make([]live, 0, n)
	var everyone []*hinter
	add := func() {
		src := newRegSource(t)
		h := &hinter{}
		tok, err := l.Add(src.reg, poll.Readable, poll.Edge, h)
		require.NoError(t, err)
		mu.Lock()
		all = append(all, live{tok, src, h})
		everyone = append(everyone, h)
		mu.Unlock()
	}
	for range n {
		add()
	}
	start(t, l, nil)

	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(2)
	go func() { // readiness for every live source, over and over
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			mu.Lock()
			srcs := make([]regSource, len(all))
			for i, s := range all {
				srcs[i] = s.src
			}
			mu.Unlock()
			for _, s := range srcs {
				_ = s.set.SetReadiness(poll.Readable)
			}
		}
	}()
	hinted := func() bool {
		mu.Lock()
		defer mu.Unlock()
		far, near := hintTotals(everyone)
		return far > 0 && near > 0
	}
	// The churn goes on past its 2000 rounds until hints have been asked
	// (or the wait's limit passes): without -race the rounds can all end
	// before the Loop's goroutine has run one batch, and hints asked after
	// the churn would not test what this test is for.
	deadline := time.Now().Add(waitLimit)
	go func() { // remove the oldest, add a new one into its entry
		defer wg.Done()
		defer close(stop)
		for i := 0; i < 2000 || (!hinted() && time.Now().Before(deadline)); i++ {
			mu.Lock()
			old := all[0]
			all = all[1:]
			mu.Unlock()
			_ = l.Remove(old.tok)
			add()
		}
	}()
	wg.Wait()
	require.True(t, hinted(), "no hints were asked during the churn")
	mu.Lock()
	defer mu.Unlock()
	for _, h := range everyone {
		require.False(t, h.late.Load(), "a handler called after its Removed")
	}
}
