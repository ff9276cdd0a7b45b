package wheel

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A Queue's resolution is rounded up to whole ticks of the wheel, so
// that its windows end where the wheel can fire: a deadline fires at the
// end of its window, never early and less than one window late, and
// windows are of equal lengths. (A 3ms resolution on a 2ms wheel, rounded
// to 3ms and then to ticks, fired deadlines in (3ms, 6ms] at 6ms but those
// in (0, 3ms] at 4ms, and one just after 3ms almost 3ms late plus a tick.)
func TestTimerQueueResolutionWholeTicks(t *testing.T) {
	const tick = 2 * time.Millisecond
	w := new(Wheel)
	w.Init(tick, 16, func() {}, func(uint64) {})
	for _, c := range []struct{ res, want time.Duration }{
		{0, 0}, {time.Millisecond, 0}, {tick, 0}, {3 * time.Millisecond, 4 * time.Millisecond},
		{4 * time.Millisecond, 4 * time.Millisecond}, {time.Second + 1, time.Second + tick},
		{math.MaxInt64, math.MaxInt64 / tick * tick},
	} {
		require.Equal(t, c.want, w.ownerRes(c.res), "resolution %v on a %v tick", c.res, tick)
	}
	id, err := w.newOwner(3*time.Millisecond, false, func(bool) {}, errClosed)
	require.NoError(t, err)
	ms := int64(time.Millisecond)
	for _, c := range []struct{ deadline, fires int64 }{
		{1, 4 * ms}, {3 * ms, 4 * ms}, {3*ms + 1, 4 * ms}, {4 * ms, 4 * ms}, {4*ms + 1, 8 * ms},
		{8 * ms, 8 * ms}, {10 * ms, 12 * ms}, {math.MaxInt64, math.MaxInt64 / int64(tick)},
	} {
		due := w.dueOf(&entry{deadline: c.deadline, owner: id})
		if c.deadline == math.MaxInt64 {
			require.GreaterOrEqual(t, due, c.fires, "deadline %d saturates", c.deadline)
			continue
		}
		require.Equal(t, c.fires, due*int64(tick), "deadline %v fires at", time.Duration(c.deadline))
	}
}
