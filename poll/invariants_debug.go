//go:build unipoll_debug

package poll

// debugChecks turns on the assertions of impossible states (invariants.go).
const debugChecks = true
