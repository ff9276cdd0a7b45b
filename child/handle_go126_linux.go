//go:build linux && go1.26

package child

import (
	"os"

	"golang.org/x/sys/unix"
)

// useRuntimePidfd lets tests take the pidfd_open path.
var useRuntimePidfd = true

// dupRuntimePidfd duplicates the pidfd the Go runtime holds for p (Go 1.26
// os.Process.WithHandle). Since the runtime's pidfd refers to p itself, the
// duplicate cannot name a reused pid. The duplicate shares the runtime's
// blocking file description and must never be made non-blocking (see
// pidfdWatch). It returns os.ErrProcessDone if p has been reaped, and
// os.ErrNoHandle if the runtime holds no pidfd for it.
func dupRuntimePidfd(p *os.Process) (int, error) {
	if !useRuntimePidfd {
		return -1, os.ErrNoHandle
	}
	fd, dupErr := -1, error(nil)
	err := p.WithHandle(func(h uintptr) {
		fd, dupErr = unix.FcntlInt(h, unix.F_DUPFD_CLOEXEC, 0)
	})
	if err != nil {
		return -1, err
	}
	if dupErr != nil {
		return -1, os.NewSyscallError("fcntl(F_DUPFD_CLOEXEC)", dupErr)
	}
	return fd, nil
}
