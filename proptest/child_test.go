//go:build linux

package proptest

import "testing"

// TestChildStateMachine is the state machine with child processes as the
// only kind of source (model_child.go), on the pidfd and the SIGCHLD paths:
// exits, kills, stops and continues, status reads and closes, between
// Register, Reregister, Deregister and Poll calls in every mode, every Poll
// result checked against the model. (TestStateMachine mixes them with the
// other kinds.)
func TestChildStateMachine(t *testing.T) {
	forBackends(t, func(t *testing.T, b string) {
		checkScaled(t, 1, stateMachineOf(backendOf(b), []kind{childKind{}}))
	})
}
