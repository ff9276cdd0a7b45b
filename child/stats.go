//go:build unix

package child

// Stats is a snapshot of the SIGCHLD fallback's process-wide state: the
// table of watched pids that every fallback Watcher shares (Method
// SIGCHLD). Where no Watcher uses the fallback (the pidfd and kqueue
// paths), it is all zero.
type Stats struct {
	// Watchers is how many fallback Watchers are open. The table listens
	// for SIGCHLD while there is one (a goroutine of internal/sigrelay).
	Watchers int
	// Watched is how many pids the table holds: those of open fallback
	// Watchers that have not yet reported their process's exit (or its
	// reaping by the owner). A pid leaves the table only once every
	// Watcher of it is Readable, so a pid that is no longer counted has
	// been reported. A count that stays above the processes still running
	// is a leak: each scan looks at every pid in it.
	Watched int
	// Scans is how many times the table has been scanned since the
	// process started: one waitid per watched pid each time, for each
	// SIGCHLD (deliveries during a scan coalesce into one more).
	Scans uint64
}

// ReadStats returns the SIGCHLD fallback's Stats now. It takes the table's
// lock for a moment; safe from any goroutine.
func ReadStats() Stats { return readStats() }
