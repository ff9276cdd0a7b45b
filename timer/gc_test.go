package timer

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/poll"
)

// A value that carries a pointer beside its key keeps what it points to
// alive while it waits, pending or expired and not yet taken, through any
// number of collections; once Cancel, TryRecv or Close gave it back, the
// Timer keeps nothing alive. Thousands of values, so that they spread
// over several chunks of the wheel.
func TestPointerValuesKeepTheirTargets(t *testing.T) {
	type box struct {
		n   int
		pad [56]byte // a size class of its own, not a tiny allocation
	}
	p := newPoll(t)
	tm := newTimer[*box](t, p, poll.Edge)
	const n = 3000
	var freed atomic.Int64 // boxes the collector has found unreachable
	ids := make([]Timeout, n)
	for i := range n {
		b := &box{n: i}
		b.pad[55] = byte(i)
		runtime.SetFinalizer(b, func(*box) { freed.Add(1) })
		d := time.Hour
		if i%2 == 1 {
			d = time.Millisecond
		}
		var err error
		ids[i], err = tm.Set(d, b)
		require.NoError(t, err)
	}
	collect := func() {
		for range 3 {
			runtime.GC()
		}
	}
	collect()
	require.Zero(t, freed.Load(), "values collected while they wait")

	// The odd ones expire; collections while they wait to be taken.
	require.True(t, testsupport.Eventually(eventWait, func() bool {
		polltestOnce(p)
		return tm.Stats().Expired == n/2
	}), "expired: %+v", tm.Stats())
	collect()
	require.Zero(t, freed.Load(), "expired values collected before they were taken")
	seen := 0
	for v := range tm.Drain() {
		require.Equal(t, 1, v.n%2, "an hour-long timeout expired")
		require.Equal(t, byte(v.n), v.pad[55], "value %d overwritten", v.n)
		seen++
	}
	require.Equal(t, n/2, seen)

	// The even ones: half cancelled, half dropped by Close.
	for i := 0; i < n/2; i += 2 {
		v, ok := tm.Cancel(ids[i])
		require.True(t, ok)
		require.Equal(t, i, v.n)
		require.Equal(t, byte(i), v.pad[55], "value %d overwritten", i)
	}
	require.NoError(t, tm.Close())
	require.True(t, testsupport.Eventually(eventWait, func() bool {
		runtime.GC()
		return freed.Load() == n
	}), "%d of %d values given back or dropped are still kept alive", n-freed.Load(), n)
	runtime.KeepAlive(tm)
}

// polltestOnce makes one short Poll call, to let the wheel expire what is
// due; what it reports is the caller's to look at through the Timer.
func polltestOnce(p *poll.Poll) {
	ev := poll.NewEvents(4)
	_, _ = p.Poll(ev, time.Millisecond)
}
