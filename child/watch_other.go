//go:build unix && !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly

package child

import "os"

// newMechanism: this system has neither pidfd nor kqueue, and no waitid
// with WNOWAIT that this package knows how to call.
func newMechanism(*os.Process, config) (mechanism, Method, error) {
	return nil, "", ErrUnsupported
}
