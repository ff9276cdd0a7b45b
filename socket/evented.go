//go:build unix

package socket

import "github.com/unipoll/unipoll/poll"

// Every socket type implements poll.Evented by forwarding to its sock,
// which delegates to poll.Fd and remembers the Poll so that Close can
// deregister first. A socket is registered with one Poll at a time: Register
// with a second one returns an error matching poll.ErrRegisteredElsewhere,
// until the first is closed (a closed Poll holds nothing).
//
// The forwarding is written out rather than promoted from an embedded sock,
// which would save these fifteen one-line methods: a method promoted through
// an embedded field dereferences the outer pointer before it runs, so a nil
// *TCPConn passed to Poll.Register would panic however nil-safe the sock's
// method is. sockOf turns a nil socket into a nil *sock, which every sock
// method treats as a socket never opened.

var (
	_ poll.Evented = (*TCPListener)(nil)
	_ poll.Evented = (*TCPConn)(nil)
	_ poll.Evented = (*UDPConn)(nil)
	_ poll.Evented = (*UnixListener)(nil)
	_ poll.Evented = (*UnixConn)(nil)
)

// Register implements poll.Evented; call Poll.Register instead.
func (l *TCPListener) Register(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	return l.sockOf().Register(p, t, interest, opts)
}

// Reregister implements poll.Evented; call Poll.Reregister instead.
func (l *TCPListener) Reregister(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	return l.sockOf().Reregister(p, t, interest, opts)
}

// Deregister implements poll.Evented; call Poll.Deregister instead.
func (l *TCPListener) Deregister(p *poll.Poll) error { return l.sockOf().Deregister(p) }

// Register implements poll.Evented; call Poll.Register instead.
func (c *TCPConn) Register(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	if c != nil && c.dial != nil && c.dial.state.Load() == dialPending {
		// Its Writable must mean "connected" (ConnectError), which a
		// Stream's (room in its queue) does not.
		return c.sockOf().Register(p, t, interest, opts)
	}
	return c.sockOf().RegisterStream(p, t, interest, opts)
}

// Reregister implements poll.Evented; call Poll.Reregister instead.
func (c *TCPConn) Reregister(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	return c.sockOf().Reregister(p, t, interest, opts)
}

// Deregister implements poll.Evented; call Poll.Deregister instead.
func (c *TCPConn) Deregister(p *poll.Poll) error { return c.sockOf().Deregister(p) }

// Register implements poll.Evented; call Poll.Register instead.
func (c *UDPConn) Register(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	return c.sockOf().Register(p, t, interest, opts)
}

// Reregister implements poll.Evented; call Poll.Reregister instead.
func (c *UDPConn) Reregister(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	return c.sockOf().Reregister(p, t, interest, opts)
}

// Deregister implements poll.Evented; call Poll.Deregister instead.
func (c *UDPConn) Deregister(p *poll.Poll) error { return c.sockOf().Deregister(p) }

// Register implements poll.Evented; call Poll.Register instead.
func (l *UnixListener) Register(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	return l.sockOf().Register(p, t, interest, opts)
}

// Reregister implements poll.Evented; call Poll.Reregister instead.
func (l *UnixListener) Reregister(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	return l.sockOf().Reregister(p, t, interest, opts)
}

// Deregister implements poll.Evented; call Poll.Deregister instead.
func (l *UnixListener) Deregister(p *poll.Poll) error { return l.sockOf().Deregister(p) }

// Register implements poll.Evented; call Poll.Register instead.
func (c *UnixConn) Register(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	return c.sockOf().RegisterStream(p, t, interest, opts)
}

// Reregister implements poll.Evented; call Poll.Reregister instead.
func (c *UnixConn) Reregister(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	return c.sockOf().Reregister(p, t, interest, opts)
}

// Deregister implements poll.Evented; call Poll.Deregister instead.
func (c *UnixConn) Deregister(p *poll.Poll) error { return c.sockOf().Deregister(p) }
