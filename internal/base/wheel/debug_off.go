//go:build !unipoll_debug

package wheel

// debugChecks is false: the assertions of broken invariants are compiled
// away. Build with -tags unipoll_debug to turn them on.
const debugChecks = false
