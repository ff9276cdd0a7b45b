//go:build linux

package child

import (
	"errors"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// peekFlags look at an exit without reaping it (WNOWAIT) and without
// waiting (WNOHANG). WEXITED alone: stops and continues are not exits.
const peekFlags = unix.WEXITED | unix.WNOWAIT | unix.WNOHANG

// peekID is waitid(idtype, id, peekFlags). It reports the exit status and
// whether the process has exited; ECHILD comes back as ErrReaped (the
// process is not, or no longer, a child that can be waited for).
func peekID(idtype, id int) (ExitStatus, bool, error) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(idtype, id, &info, peekFlags, nil)
		if err == nil {
			break
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.ECHILD) {
			return ExitStatus{}, false, ErrReaped
		}
		return ExitStatus{}, false, os.NewSyscallError("waitid", err)
	}
	pid, status := childFields(&info)
	if pid == 0 {
		return ExitStatus{}, false, nil // WNOHANG: not exited yet
	}
	return ExitStatus{pid: pid, ws: waitStatus(info.Code, status)}, true, nil
}

// childFields reads si_pid and si_status from a siginfo_t that waitid
// filled: the union that holds them follows si_signo, si_errno and si_code
// (three 32-bit integers), aligned as a pointer is, with si_uid between
// them. x/sys keeps the union opaque.
func childFields(info *unix.Siginfo) (pid int, status int32) {
	const align = unsafe.Alignof(uintptr(0))
	const off = (12 + align - 1) &^ (align - 1)
	base := unsafe.Pointer(info)
	pid = int(*(*int32)(unsafe.Add(base, off)))
	status = *(*int32)(unsafe.Add(base, off+8))
	return pid, status
}

// waitStatus encodes si_code and si_status as wait(2) would, which is what
// syscall.WaitStatus decodes.
func waitStatus(code, status int32) syscall.WaitStatus {
	const cldExited, cldKilled, cldDumped = 1, 2, 3 // si_code for SIGCHLD
	switch code {
	case cldExited:
		return syscall.WaitStatus((status & 0xff) << 8)
	case cldKilled:
		return syscall.WaitStatus(status & 0x7f)
	case cldDumped:
		return syscall.WaitStatus(status&0x7f | 0x80)
	}
	return syscall.WaitStatus(0xffff) // not an exit: waitid(WEXITED) gives none
}
