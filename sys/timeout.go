package sys

import "time"

// deadline turns a relative timeout into something EINTR retries can
// recompute from: a negative timeout stays "forever".
// A zero timeout (the hot "just look" case) never reads the clock.
type deadline struct {
	forever bool
	now     bool // zero timeout
	at      time.Time
}

func newDeadline(timeout time.Duration) deadline {
	switch {
	case timeout < 0:
		return deadline{forever: true}
	case timeout == 0:
		return deadline{now: true}
	}
	return deadline{at: time.Now().Add(timeout)}
}

// remaining is the time left, never negative; -1 means forever.
func (d deadline) remaining() time.Duration {
	if d.forever {
		return -1
	}
	if d.now {
		return 0
	}
	left := time.Until(d.at)
	if left < 0 {
		return 0
	}
	return left
}

// millis rounds a timeout up to whole milliseconds for the system calls that
// take them, so that a sub-millisecond wait blocks for 1 ms instead of
// becoming a busy loop of zero-timeout calls.
func millis(timeout time.Duration) int {
	if timeout < 0 {
		return -1
	}
	ms := (timeout + time.Millisecond - 1) / time.Millisecond
	if ms > 1<<31-1 {
		ms = 1<<31 - 1
	}
	return int(ms)
}
