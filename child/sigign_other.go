//go:build unix && !(linux && (amd64 || arm64 || riscv64 || loong64 || ppc64 || ppc64le || s390x || 386 || arm))

package child

import (
	ossignal "os/signal"
	"syscall"
)

// sigchldIgnored reports whether os/signal ignores SIGCHLD (signal.Ignore),
// after which the kernel reaps children as they exit.
func sigchldIgnored() bool { return ossignal.Ignored(syscall.SIGCHLD) }
