//go:build unix

package socket

import "golang.org/x/sys/unix"

// ListenOption configures ListenTCP (and ListenUDP: WithReusePort). Make one with WithReusePort or
// WithBacklog; the zero value, a nil ListenOption, is ignored.
type ListenOption func(*listenConfig)

type listenConfig struct {
	reusePort bool
	backlog   int
}

// defaultBacklog lets the kernel choose: it caps listen's backlog at its own
// maximum (net.core.somaxconn on Linux, kern.ipc.somaxconn on the BSDs).
const defaultBacklog = unix.SOMAXCONN

// WithReusePort sets SO_REUSEPORT, so that several listeners, in this
// process or others, can bind the same address and port. On Linux the
// kernel then spreads incoming connections across them.
func WithReusePort() ListenOption {
	return func(c *listenConfig) { c.reusePort = true }
}

// WithBacklog sets the length of the queue of connections that have
// completed the handshake but are not yet accepted. A value of zero or less
// means the system's maximum.
func WithBacklog(n int) ListenOption {
	return func(c *listenConfig) {
		if n > 0 {
			c.backlog = n
		} else {
			c.backlog = defaultBacklog
		}
	}
}

func newListenConfig(opts []ListenOption) listenConfig {
	c := listenConfig{backlog: defaultBacklog}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}
