//go:build unix && !linux && !openbsd

package sys

import (
	"time"

	"golang.org/x/sys/unix"
)

// pollWait is poll(2). x/sys has no ppoll here, so the timeout is rounded up
// to whole milliseconds (never down to a busy loop); negative blocks.
func pollWait(fds []unix.PollFd, timeout time.Duration) (int, error) {
	return unix.Poll(fds, millis(timeout))
}
