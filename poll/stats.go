package poll

import "sync/atomic"

// Stats are counters since the Poll was created, for tuning and debugging.
type Stats struct {
	// Polls is the number of Poll calls.
	Polls uint64
	// Selects is the number of times Poll entered the OS selector. A pass
	// that will not block and has no descriptor registered does not: the
	// kernel has nothing to report for it.
	Selects uint64
	// KernelWaits is the number of system calls the selector made to wait
	// or look for events (epoll_wait, poll, kevent), retries included. One
	// Select may make more than one (poll(2) looks at resting descriptors
	// on their own); an idle Poll makes almost none.
	KernelWaits uint64
	// OSEvents is the number of descriptor events delivered.
	OSEvents uint64
	// UserEvents is the number of Registration events delivered.
	UserEvents uint64
	// WakerWrites is the number of times a wake-up was written to the
	// kernel; coalescing keeps it far below the number of SetReadiness calls.
	WakerWrites uint64
	// EmptyWakeups counts blocking selects that were woken early (by the
	// waker or a kernel event) and yet had nothing to report: a stale or
	// filtered kernel event, a wake-up for readiness already taken or
	// unset. Poll then waits again.
	EmptyWakeups uint64
	// TimedWakeups counts blocking selects whose timeout was shortened to a
	// delayed-readiness deadline and that returned by that timeout. With
	// nothing delayed it stays 0: an idle Poll does not wake up.
	TimedWakeups uint64
	// TimersPending is the number of deadlines in the timing wheel: delayed
	// readiness of Registrations and TimerQueue deadlines alike.
	TimersPending uint64
	// TimersFired is the number of deadlines that have passed.
	TimersFired uint64
	// TimersCancelled is the number of deadlines removed before they
	// passed (a replaced or unset delay, a closed Registration,
	// TimerQueue.Remove).
	TimersCancelled uint64
	// Stale counts kernel events dropped because their descriptor had been
	// deregistered or reregistered in the meantime (its generation, part
	// of the key the kernel holds, no longer matches). A reregistered
	// descriptor is reported afresh under its new interest.
	Stale uint64
	// SharedTokens counts Register and Reregister calls that gave a
	// source a Token another source registered with this Poll held at
	// the time (see Token). Counted only in a build with the
	// unipoll_debug tag, which keeps each source's Token for it; 0 in a
	// normal build.
	SharedTokens uint64
}

type statCounters struct {
	polls, selects, osEvents, userEvents, emptyWakeups, timedWakeups, stale, sharedTokens atomic.Uint64
}
