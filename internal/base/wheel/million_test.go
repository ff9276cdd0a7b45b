package wheel

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A million random deadlines, exact: each fires at the first Expire whose
// reading of the clock has reached its due tick (the deadline rounded up
// to a tick), so never before its deadline and, for a consumer that
// expires every tick, at most one tick after it. The clock moves by
// Advance in random steps, from a fraction of a tick to several slots of
// level 1, so that deadlines fire from level 0, from cascades, and from a
// jump past whole levels; a tenth of them are removed before they fire,
// and new ones are added while the others are pending (staged, then
// placed by the next Expire).
func TestWheelMillionDeadlines(t *testing.T) {
	n := 1_000_000
	if testing.Short() || raceEnabled {
		// The race detector makes each locked call ten times slower; the
		// structure is the same at a tenth of the size.
		n = 100_000
	}
	const tick = time.Millisecond
	w, id := newTestWheel(t, tick, 16, 0)
	rng := rand.New(rand.NewPCG(27, uint64(n)))
	deadlines := make([]int64, 0, n+n/10)
	ids := make([]ID, 0, n+n/10)
	fired := make([]bool, 0, n+n/10)
	add := func(span time.Duration) {
		eid, dl := w.add(id, uint64(len(deadlines)), time.Duration(rng.Int64N(int64(span))))
		deadlines, ids, fired = append(deadlines, dl), append(ids, eid), append(fired, false)
	}
	for range n {
		add(10 * time.Second)
	}
	removed, got := 0, 0
	prev := int64(-1) // the tick of the previous Expire's reading
	for step := 0; w.Pending() > 0; step++ {
		switch r := rng.IntN(100); {
		case r < 60:
			w.Advance(time.Duration(rng.Int64N(int64(tick))))
		case r < 95:
			w.Advance(time.Duration(rng.Int64N(int64(20 * tick))))
		default:
			w.Advance(time.Duration(rng.Int64N(int64(300 * tick))))
		}
		for range rng.IntN(3) {
			if k := rng.IntN(len(ids)); !fired[k] {
				if key, ok := w.remove(id, ids[k]); ok {
					require.Equal(t, uint64(k), key)
					fired[k] = true // removed: must not fire
					removed++
				}
			}
		}
		if len(deadlines) < cap(deadlines) && rng.IntN(4) == 0 {
			add(2 * time.Second)
		}
		var rd Reading
		w.ExpireWith(&rd)
		now := int64(w.perTick.div(uint64(w.read(&rd))))
		for {
			key, ok := w.take(id)
			if !ok {
				break
			}
			due := w.dueTick(deadlines[key])
			switch {
			case fired[key]:
				t.Fatalf("deadline %d fired twice, or after its removal", key)
			case deadlines[key] > rd.at || due > now:
				t.Fatalf("deadline %d (due at tick %d) fired early, at tick %d", key, due, now)
			case due <= prev:
				t.Fatalf("deadline %d was due at the previous Expire (tick %d) and did not fire (late)", key, prev)
			}
			fired[key] = true
			got++
		}
		prev = now
		if step%5000 == 0 {
			require.NoError(t, w.Check())
		}
	}
	require.NoError(t, w.Check())
	require.Equal(t, len(deadlines), got+removed, "every deadline fired or was removed")
	require.Greater(t, removed, 0)
}
