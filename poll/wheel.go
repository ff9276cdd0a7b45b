package poll

import (
	"time"

	"github.com/unipoll/unipoll/internal/base/slab"
	"github.com/unipoll/unipoll/internal/base/wheel"
)

// The Poll's side of its timing wheel. The wheel itself, its invariants
// and its lock order are in internal/base/wheel; a Poll has one, which it
// drives from its Poll calls (poll_wait.go: expire, sleepTimeout, awake)
// and closes with itself. The Poll owns the wheel's owner 0, the delayed
// readiness of Registrations (delay.go): the wheel hands it the key of
// each delay that comes due (fireDelay, under the wheel's mutex), and
// expire sets the readiness once that mutex is released. TimerQueues own
// the other owner ids (timer_queue.go).

// pollWheel is a Poll's wheel and what the Poll keeps for owner 0.
type pollWheel struct {
	wheel.Wheel

	// nodes maps owner 0's keys to Registrations, so that the wheel holds
	// a Go pointer to a node only while its delay is pending. Guarded by
	// the Wheel's mutex.
	nodes slab.Slab[*regNode]
	// dueDelays are the delays that came due in one expire, to be set
	// once the Wheel's mutex is released. Consumer only.
	dueDelays []dueDelay
}

// wheelID names one entry of the wheel (a Registration's pending delay).
type wheelID = wheel.ID

// maxWheelSlots is the most slots a level may have (Config.WheelSlots).
const maxWheelSlots = wheel.MaxSlots

// dueDelay is a Registration whose delay came due, to be set outside the
// Wheel's mutex.
type dueDelay struct {
	n *regNode
	r Ready
}

func (w *pollWheel) init(tick time.Duration, slots int, wake func()) {
	w.Init(tick, slots, wake, w.fireDelay)
}

// expire brings the wheel to the tick of clk (read now if clk has no
// reading yet) and sets the delayed readiness that came due. Consumer
// only. The check of an empty wheel is inlined here: pollOnce calls
// expire on every pass, wheel or no wheel.
func (w *pollWheel) expire(clk *wheel.Reading) {
	if w.Busy() {
		w.expireDue(clk)
	}
}

func (w *pollWheel) expireDue(clk *wheel.Reading) {
	w.ExpireWith(clk)
	// Set delayed readiness outside the mutex: it may link the
	// Registration into the readiness queue (lock-free, but no reason to
	// hold the mutex for it).
	for i, f := range w.dueDelays {
		_ = f.n.set(f.r)
		w.dueDelays[i] = dueDelay{}
	}
	w.dueDelays = w.dueDelays[:0]
}

// sleepTimeout is the wheel's SleepTimeout, counted from clk; pair it
// with awake.
func (w *pollWheel) sleepTimeout(timeout time.Duration, clk *wheel.Reading) (time.Duration, bool) {
	return w.SleepTimeout(timeout, clk)
}

func (w *pollWheel) awake() { w.Awake() }

// close drops every entry, closes every TimerQueue's owner, and lets go of
// the Registrations of pending delays (Poll.Close).
func (w *pollWheel) close() {
	w.Close()
	w.Lock()
	w.nodes.Reset()
	w.Unlock()
}
