//go:build !unipoll_debug

package poll

// debugChecks is false: the assertions of invariants.go are compiled away.
// Build with -tags unipoll_debug to turn them on.
const debugChecks = false

// stLinked is 0: nothing sets the debug bit, and clearing it changes no
// mask (invariants.go).
const stLinked = uint64(0)
