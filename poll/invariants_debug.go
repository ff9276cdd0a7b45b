//go:build unipoll_debug

package poll

// debugChecks turns on the assertions of impossible states (invariants.go).
const debugChecks = true

// stLinked is the state word's debug bit (invariants.go).
const stLinked = uint64(1) << 32
