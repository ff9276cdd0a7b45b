//go:build linux && !go1.26

package child

import (
	"errors"
	"os"
)

// useRuntimePidfd lets tests take the pidfd_open path.
var useRuntimePidfd = false

// dupRuntimePidfd: before Go 1.26 the runtime's pidfd is out of reach, so
// Watch opens its own with pidfd_open.
func dupRuntimePidfd(*os.Process) (int, error) {
	return -1, errors.New("no runtime pidfd before Go 1.26")
}
