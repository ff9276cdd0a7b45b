//go:build linux

package proptest

import (
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
)

// TestStateMachineCrowd is TestStateMachine with the crowd's steps
// (model_crowd.go): thousands of Registrations made ready, unset, re-armed
// and closed in bursts, some from another goroutine while the world blocks
// in Poll(-1), polled with buffers of up to the whole crowd, among the
// other sources and steps. Its wheels are small (1ms ticks, 4 to 16 slots)
// so that a Lag step goes past whole rotations.
func TestStateMachineCrowd(t *testing.T) {
	forBackends(t, func(t *testing.T, b string) {
		// A case costs tens of milliseconds (thousands of
		// Registrations, lags of whole rotations): a quarter of the
		// soak.
		checkScaledSoak(t, 1, 4, crowdMachine(backendOf(b)))
	})
}

func crowdMachine(be backend) func(*rapid.T) {
	return func(t *rapid.T) {
		cfg := poll.Config{
			WheelTick:  time.Millisecond,
			WheelSlots: rapid.SampledFrom([]int{4, 8, 16}).Draw(t, "wheel slots"),
			SpinWait:   rapid.SampledFrom(spinChoices).Draw(t, "spin wait (0 default, -1 none)"),
		}
		w := newWorld(t, be, cfg)
		defer w.cleanup()
		actions := w.actions()
		for name, a := range w.crowdActions() {
			actions[name] = a
		}
		t.Repeat(actions)
		w.settle(t)
		w.shutdown(t)
	}
}
