//go:build !linux

package netloop

import "errors"

// errSpliceRefused: the kernel does not splice these descriptors; the
// direction copies instead. Without splice(2) it never happens.
var errSpliceRefused = errors.New("unipoll: netloop: splice refused")

// relayForceCopy: every direction copies here anyway.
var relayForceCopy = false

// newTransport is the copy: splice(2) is Linux's.
func newTransport(src, sink Stream) transport { return newRing() }

// spliceable: never without splice(2).
func spliceable(src, sink Stream) bool { return false }
