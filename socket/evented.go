//go:build unix

package socket

import "github.com/unipoll/unipoll/poll"

// Every socket type implements poll.Evented by forwarding to its sock,
// which delegates to poll.Fd and remembers the Poll so that Close can
// deregister first. A socket is registered with one Poll at a time: Register
// with a second one returns an error matching poll.ErrRegisteredElsewhere.

var (
	_ poll.Evented = (*TCPListener)(nil)
	_ poll.Evented = (*TCPConn)(nil)
	_ poll.Evented = (*UDPConn)(nil)
	_ poll.Evented = (*UnixListener)(nil)
	_ poll.Evented = (*UnixConn)(nil)
)

// Register implements poll.Evented.
func (l *TCPListener) Register(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	return l.s.register(p, t, interest, opts)
}

// Reregister implements poll.Evented.
func (l *TCPListener) Reregister(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	return l.s.reregister(p, t, interest, opts)
}

// Deregister implements poll.Evented.
func (l *TCPListener) Deregister(p *poll.Poll) error { return l.s.deregister(p) }

// Register implements poll.Evented.
func (c *TCPConn) Register(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	return c.s.register(p, t, interest, opts)
}

// Reregister implements poll.Evented.
func (c *TCPConn) Reregister(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	return c.s.reregister(p, t, interest, opts)
}

// Deregister implements poll.Evented.
func (c *TCPConn) Deregister(p *poll.Poll) error { return c.s.deregister(p) }

// Register implements poll.Evented.
func (c *UDPConn) Register(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	return c.s.register(p, t, interest, opts)
}

// Reregister implements poll.Evented.
func (c *UDPConn) Reregister(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	return c.s.reregister(p, t, interest, opts)
}

// Deregister implements poll.Evented.
func (c *UDPConn) Deregister(p *poll.Poll) error { return c.s.deregister(p) }

// Register implements poll.Evented.
func (l *UnixListener) Register(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	return l.s.register(p, t, interest, opts)
}

// Reregister implements poll.Evented.
func (l *UnixListener) Reregister(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	return l.s.reregister(p, t, interest, opts)
}

// Deregister implements poll.Evented.
func (l *UnixListener) Deregister(p *poll.Poll) error { return l.s.deregister(p) }

// Register implements poll.Evented.
func (c *UnixConn) Register(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	return c.s.register(p, t, interest, opts)
}

// Reregister implements poll.Evented.
func (c *UnixConn) Reregister(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	return c.s.reregister(p, t, interest, opts)
}

// Deregister implements poll.Evented.
func (c *UnixConn) Deregister(p *poll.Poll) error { return c.s.deregister(p) }
