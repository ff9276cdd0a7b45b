//go:build linux && !arm64 && !loong64 && !riscv64

package proptest

import "golang.org/x/sys/unix"

// The architectures that still have poll and epoll_wait as system calls
// (x/sys's unix.Poll and unix.EpollWait use them there); arm64, loong64
// and riscv64 have only ppoll and epoll_pwait.
func init() {
	waitSyscalls[unix.SYS_POLL] = true
	waitSyscalls[unix.SYS_EPOLL_WAIT] = true
}
