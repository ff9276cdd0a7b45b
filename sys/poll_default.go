//go:build unix && !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly

package sys

// defaultBackend is poll(2) on the unixes that have neither epoll nor kqueue
// (solaris, illumos, aix).
const defaultBackend = BackendPoll
