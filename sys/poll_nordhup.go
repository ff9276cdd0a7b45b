//go:build unix && !linux && !freebsd

package sys

// pollRdHup is 0: this system's poll(2) has no POLLRDHUP. A peer's shutdown
// shows as POLLIN (a read returns 0) or, once both sides are closed, POLLHUP.
const pollRdHup = 0
