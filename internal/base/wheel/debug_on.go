//go:build unipoll_debug

package wheel

// debugChecks turns on the assertions of broken invariants (corrupted).
const debugChecks = true
