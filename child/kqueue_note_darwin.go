//go:build darwin

package child

import "golang.org/x/sys/unix"

// noteExit asks for the exit, with its status in the event's data.
const noteExit = unix.NOTE_EXIT | unix.NOTE_EXITSTATUS
