//go:build unix && !linux

package child

// readStats: only Linux has the SIGCHLD fallback.
func readStats() Stats { return Stats{} }
