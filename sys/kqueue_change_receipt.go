//go:build darwin || freebsd || openbsd || dragonfly

package sys

import "golang.org/x/sys/unix"

// evReceipt makes every change report its own result, so that one kevent
// call can apply several changes and tell which of them failed.
const evReceipt = unix.EV_RECEIPT
