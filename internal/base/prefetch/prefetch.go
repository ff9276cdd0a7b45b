// Package prefetch asks the CPU to bring cache lines in ahead of their
// use, so that a dispatch that goes through thousands of sources (each
// one's entry, handler and state a cache miss of its own) overlaps those
// misses with the work on the source before it, rather than stalling on
// each in turn.
//
// A prefetch is a hint: it never faults, whatever the address, and
// changes no value, so a wrong or stale address costs only the line
// fetched for nothing. Go has no prefetch that code outside the runtime
// can use, so amd64 and arm64 have an instruction in assembly; elsewhere
// Lines does nothing.
package prefetch

import "unsafe"

// LineSize is the cache line the hints count in.
const LineSize = 64

// Stage says how far ahead of its call a Hinter is asked: Far is two
// calls ahead, Near the call just before its own.
type Stage uint8

const (
	// Far: the handler's own lines may not have arrived yet; ask only
	// for them, computing their addresses without loading any.
	Far Stage = iota
	// Near: the handler's own lines are in (they were asked for at Far);
	// ask for what they point to.
	Near
)

// Hinter is a handler that can name the lines its next call will touch.
// Its method takes a Stage, a type of this internal package, so that no
// handler outside the module implements it by accident.
type Hinter interface {
	PrefetchHint(Stage)
}

// Span asks for the n lines from p on (n ≤ 0 asks for none).
func Span(p unsafe.Pointer, n int) {
	if n > 0 {
		lines(p, n)
	}
}
