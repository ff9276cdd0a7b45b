//go:build unix

package sys

import "golang.org/x/sys/unix"

// ignoringEINTR retries a system call interrupted by a signal: the Go runtime
// delivers signals to any thread, so EINTR is routine and never an error.
func ignoringEINTR(fn func() error) error {
	for {
		err := fn()
		if err != unix.EINTR {
			return err
		}
	}
}
