//go:build linux || openbsd

package sys

import (
	"time"

	"golang.org/x/sys/unix"
)

// pollWait is poll(2) with a nanosecond timeout (ppoll); negative blocks.
func pollWait(fds []unix.PollFd, timeout time.Duration) (int, error) {
	if timeout < 0 {
		return unix.Ppoll(fds, nil, nil)
	}
	ts := unix.NsecToTimespec(int64(timeout))
	return unix.Ppoll(fds, &ts, nil)
}
