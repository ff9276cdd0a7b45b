//go:build linux || freebsd

package sys

import "golang.org/x/sys/unix"

// pollRdHup is requested with POLLIN: it reports a peer that shut down its
// writing side, which plain POLLHUP does not.
const pollRdHup = unix.POLLRDHUP
