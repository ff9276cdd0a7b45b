//go:build linux

package proptest

import (
	"testing"

	"pgregory.net/rapid"
)

// TestLoopStateMachine drives an eventloop.Loop, one iteration at a time,
// through random sequences of Add (every mode and a few priorities),
// readiness changes, the actions handlers return (Keep, Rearm, Disarm,
// Remove), the same changes made from outside, Trigger, operations with
// the tokens of removed sources (whose entries later sources reuse), and
// iterations with and without a cap on calls; every iteration's calls are
// checked against the model (model_loop.go). Conns on the same Loop take
// writes (to the edge of MaxWriteQueue too), Close, Abort, PauseRead and
// ResumeRead, while their peers send (to the edge of MaxReadBuffer too),
// read and shut down; their queued output, held input, back pressure and
// state are checked after every step (model_loop_conn.go). One subtest
// per backend.
func TestLoopStateMachine(t *testing.T) {
	forBackends(t, func(t *testing.T, b string) {
		checkScaled(t, stateMachineChecks, loopStateMachine(b))
	})
}

func loopStateMachine(backend string) func(*rapid.T) {
	return func(t *rapid.T) {
		w := newLoopWorld(t, backend)
		ok := false
		defer func() {
			if !ok {
				w.discard()
			}
		}()
		t.Repeat(w.actions())
		w.close(t)
		ok = true
	}
}
