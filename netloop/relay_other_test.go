//go:build !linux

package netloop

import "testing"

// relayMaxBound is the most a direction's transport may hold.
const relayMaxBound = relayRingSize

// relayPipes: without splice(2) there are no pipes.
type relayPipes struct{}

func openPipes(*testing.T, *relayRig, relayCase) relayPipes { return relayPipes{} }

func (relayPipes) requireClosed(*testing.T) {}
