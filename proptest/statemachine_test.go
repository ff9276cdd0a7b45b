//go:build linux

package proptest

import (
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
)

// TestStateMachine drives one Poll with random sequences of operations on
// sockets, pipes and Registrations, and checks every Poll result against
// the model (model.go). One subtest per backend.
func TestStateMachine(t *testing.T) {
	for _, b := range backendsUnderTest() {
		t.Run(b, func(t *testing.T) {
			checkScaled(t, stateMachineChecks, stateMachine(backendOf(b)))
		})
	}
}

// stateMachine is the property behind TestStateMachine and
// FuzzStateMachine: every kind of source.
func stateMachine(be backend) func(*rapid.T) { return stateMachineOf(be, kinds) }

// stateMachineOf is the state machine restricted to some kinds of source.
func stateMachineOf(be backend, ks []kind) func(*rapid.T) {
	return func(t *rapid.T) {
		cfg := poll.Config{
			WheelTick:  rapid.SampledFrom([]time.Duration{time.Millisecond, 2 * time.Millisecond}).Draw(t, "wheel tick"),
			WheelSlots: rapid.SampledFrom(wheelSlotChoices).Draw(t, "wheel slots"),
			SpinWait:   rapid.SampledFrom(spinChoices).Draw(t, "spin wait (0 default, -1 none)"),
		}
		w := newWorld(t, be, cfg)
		w.kinds = ks
		defer w.cleanup()
		t.Repeat(w.actions())
		w.settle(t)
		w.shutdown(t)
	}
}

// stateMachineChecks multiplies rapid's checks for TestStateMachine: a case
// costs a few milliseconds, and some injected bugs needed 30-70 cases to
// show.
const stateMachineChecks = 4

// wheelSlotChoices are the timing wheel sizes drawn: the default, and small
// ones whose rotation is shorter than the delays drawn (wrap-around).
var wheelSlotChoices = []int{1024, 4, 64}
