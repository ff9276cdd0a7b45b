//go:build freebsd || netbsd || openbsd || dragonfly

package child

import "golang.org/x/sys/unix"

// noteExit asks for the exit; these systems put its status in the event's
// data.
const noteExit = unix.NOTE_EXIT
