//go:build linux

package proptest

import "testing"

// TestSignalStateMachine is the state machine with signal Watchers as the
// only kind of source (model_signal.go): signals sent to the test process,
// watched by one to six Watchers of overlapping sets of signals, taken with
// Next and Drain, Watchers closed, between Register, Reregister, Deregister
// and Poll calls in every mode, every Poll result checked against the
// model. (TestStateMachine mixes them with the other kinds.)
func TestSignalStateMachine(t *testing.T) {
	forBackends(t, func(t *testing.T, b string) {
		checkScaled(t, 2, stateMachineOf(backendOf(b), []kind{sigKind{}}))
	})
}
