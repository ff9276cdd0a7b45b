//go:build linux || freebsd || netbsd || openbsd || dragonfly

package child

import "golang.org/x/sys/unix"

// pipeFds makes a pipe whose two descriptors are close-on-exec from the
// start, so that no child started meanwhile by another goroutine inherits
// them.
func pipeFds() (r, w int, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return -1, -1, err
	}
	return p[0], p[1], nil
}
