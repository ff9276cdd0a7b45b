//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64 || ppc64le || s390x || 386 || arm)

package child

import (
	ossignal "os/signal"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sigchldIgnored reports whether SIGCHLD is ignored: by os/signal
// (signal.Ignore), or in the kernel's own record, where C code may have set
// SIG_IGN or SA_NOCLDWAIT. Either way the kernel reaps children as they
// exit and no exit status is left for anyone.
//
// The kernel is asked with rt_sigaction(SIGCHLD, NULL, &old), which changes
// nothing. On these architectures struct sigaction starts with the handler
// and then the flags, both the size of a pointer.
func sigchldIgnored() bool {
	if ossignal.Ignored(syscall.SIGCHLD) {
		return true
	}
	var old [8]uintptr // larger than any struct sigaction here
	const sigsetSize = 8
	_, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(syscall.SIGCHLD), 0, uintptr(unsafe.Pointer(&old[0])), sigsetSize, 0, 0)
	if errno != 0 {
		return false
	}
	const sigIgn, saNoCldWait = 1, 2
	return old[0] == sigIgn || old[1]&saNoCldWait != 0
}
