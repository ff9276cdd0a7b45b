//go:build linux

package proptest

import (
	"fmt"
	"time"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
)

// The Lag step: time passes without a Poll call, as for a consumer busy
// elsewhere that comes back late. Elsewhere time passes only inside Poll
// calls, and a Poll that blocks wakes up for every wheel deadline, so the
// wheel never has to catch up on more than a few ticks. After a lag longer
// than a whole rotation of a small wheel, every delay that came due in the
// meantime, in whichever slot, must fire in the next Poll call: the
// timed kinds' beforePoll makes them owed at the start of that call (rule
// 10: at most one tick late), so the call must report all of them if its
// buffer has room, and carry the rest over to the next calls if not; and
// afterPoll checks that their readiness is set whether or not they fit.

// maxLagRotation is the longest wheel rotation that a lag goes past; with
// larger wheels a lag is a few ticks.
const maxLagRotation = 32 * time.Millisecond

// Lag lets time pass without polling, when something waits for time.
func (w *world) Lag(t *rapid.T) {
	if w.closed || !w.timePending() {
		t.Skip("nothing waits for time")
	}
	tick := w.cfgTick()
	slots := w.cfg.WheelSlots
	if slots == 0 {
		slots = poll.DefaultWheelSlots
	}
	rotation := tick * time.Duration(slots)
	var d time.Duration
	if rotation <= maxLagRotation {
		d = rotation + time.Duration(rapid.IntRange(1, 2*slots).Draw(t, "lag past a rotation (ticks)"))*tick
	} else {
		d = time.Duration(rapid.IntRange(1, 20).Draw(t, "lag (ticks)")) * tick
	}
	start := time.Now()
	passTime(start.Add(d))
	w.logTimed(fmt.Sprintf("lag %v without polling (wheel of %d slots of %v: a rotation is %v)", d, slots, tick, rotation),
		fmt.Sprintf(" (%v)", time.Since(start).Round(time.Microsecond)))
}

// timePending reports whether a live source has a change pending in time.
func (w *world) timePending() bool {
	for _, s := range w.live() {
		if tm, ok := s.impl.(timed); ok {
			if _, _, ok := tm.pending(s); ok {
				return true
			}
		}
	}
	return false
}

// passTime blocks until the clock has passed deadline. In the steps and
// properties that use it the passage of time is the input under test (a
// consumer that comes back late), not a way to order two goroutines, so
// waiting on the clock is what the test means; it loops because a timer
// may fire a little before the monotonic clock reads the deadline.
func passTime(deadline time.Time) {
	for d := time.Until(deadline); d > 0; d = time.Until(deadline) {
		<-time.After(d)
	}
}
