//go:build unix && !darwin && !aix

package sys

import (
	"os"

	"golang.org/x/sys/unix"
)

// nonblockingPipe opens a pipe whose ends are non-blocking and close-on-exec
// from birth.
func nonblockingPipe() ([2]int, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		return p, os.NewSyscallError("pipe2", err)
	}
	return p, nil
}
