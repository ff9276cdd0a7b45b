//go:build unix

package socket

import (
	"net"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/poll"
)

// call is one exported method (or Poll method taking the socket) with an
// error result, bound to its receiver.
type call struct {
	name string
	f    func() error
}

// unopened describes one socket type as a nil pointer or a zero value: the
// calls that must fail with ErrNotOpen, and what its methods without an
// error result return.
type unopened struct {
	kind  string
	calls []call
	fd    func() int
	addrs map[string]func() net.Addr
	// zeros are the methods without an error result that must report
	// their zero (no completion mode, nothing buffered): each says
	// whether it did.
	zeros map[string]func() bool
	// methods is the type's exported method set, so that a method added
	// later without a case here fails the test.
	methods reflect.Type
}

// evented adds the poll.Evented methods, called directly and through a Poll.
func evented(p *poll.Poll, e poll.Evented, calls ...call) []call {
	return append(calls,
		call{"Register", func() error { return e.Register(p, 1, poll.Readable, poll.Edge) }},
		call{"Reregister", func() error { return e.Reregister(p, 1, poll.Readable, poll.Edge) }},
		call{"Deregister", func() error { return e.Deregister(p) }},
		call{"Poll.Register", func() error { return p.Register(e, 1, poll.Readable, poll.Edge) }},
		call{"Poll.Reregister", func() error { return p.Reregister(e, 1, poll.Readable, poll.Edge) }},
		call{"Poll.Deregister", func() error { return p.Deregister(e) }},
	)
}

// conn is what the connection types have in common here.
type conn interface {
	poll.Evented
	Fd() int
	LocalAddr() net.Addr
	RemoteAddr() net.Addr
	SetReadBuffer(int) error
	SetWriteBuffer(int) error
	Close() error
}

// connCase is the case of a connection type: its own calls, then those
// every connection type has (buffer sizes, Close) and evented's.
func connCase(kind string, c conn, p *poll.Poll, own ...call) unopened {
	return unopened{
		kind: kind,
		calls: evented(p, c, append(own,
			call{"SetReadBuffer", func() error { return c.SetReadBuffer(4096) }},
			call{"SetWriteBuffer", func() error { return c.SetWriteBuffer(4096) }},
			call{"Close", c.Close},
		)...),
		fd:      c.Fd,
		addrs:   map[string]func() net.Addr{"LocalAddr": c.LocalAddr, "RemoteAddr": c.RemoteAddr},
		methods: reflect.TypeOf(c),
	}
}

// listener is what the listener types have in common here.
type listener interface {
	poll.Evented
	Fd() int
	Addr() net.Addr
	Close() error
}

// listenerCase is the case of a listener type, whose Accept is accept.
func listenerCase(kind string, l listener, p *poll.Poll, accept func() error) unopened {
	return unopened{
		kind:    kind,
		calls:   evented(p, l, call{"Accept", accept}, call{"Close", l.Close}),
		fd:      l.Fd,
		addrs:   map[string]func() net.Addr{"Addr": l.Addr},
		methods: reflect.TypeOf(l),
	}
}

// streamZeros are the completion-mode methods of the stream conns.
func streamZeros(completion func() bool, buffered func() (int, int), flushed func() bool) map[string]func() bool {
	return map[string]func() bool{
		"Completion":         func() bool { return !completion() },
		"CompletionBuffered": func() bool { r, w := buffered(); return r == 0 && w == 0 },
		"CompletionFlushed":  flushed, // nothing queued
	}
}

func tcpConnCase(kind string, c *TCPConn, p *poll.Poll) unopened {
	u := tcpConnCalls(kind, c, p)
	u.zeros = streamZeros(c.Completion, c.CompletionBuffered, c.CompletionFlushed)
	return u
}

func tcpConnCalls(kind string, c *TCPConn, p *poll.Poll) unopened {
	b := make([]byte, 4)
	return connCase(kind+" *TCPConn", c, p,
		call{"Read", func() error { _, err := c.Read(b); return err }},
		call{"Read(empty)", func() error { _, err := c.Read(nil); return err }},
		call{"Write", func() error { _, err := c.Write(b); return err }},
		call{"CloseWrite", c.CloseWrite},
		call{"CloseRead", c.CloseRead},
		call{"SetNoDelay", func() error { return c.SetNoDelay(true) }},
		call{"SetKeepAlive", func() error { return c.SetKeepAlive(true) }},
		call{"SetKeepAliveConfig", func() error { return c.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true}) }},
		call{"SetLinger", func() error { return c.SetLinger(0) }},
		call{"SetUserTimeout", func() error { return c.SetUserTimeout(time.Second) }},
		call{"ConnectError", c.ConnectError},
	)
}

func tcpListenerCase(kind string, l *TCPListener, p *poll.Poll) unopened {
	return listenerCase(kind+" *TCPListener", l, p, func() error { _, err := l.Accept(); return err })
}

func udpConnCase(kind string, c *UDPConn, p *poll.Poll) unopened {
	b := make([]byte, 4)
	to := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}
	return connCase(kind+" *UDPConn", c, p,
		call{"Read", func() error { _, err := c.Read(b); return err }},
		call{"Write", func() error { _, err := c.Write(b); return err }},
		call{"ReadFrom", func() error { _, _, err := c.ReadFrom(b); return err }},
		call{"WriteTo", func() error { _, err := c.WriteTo(b, to); return err }},
	)
}

func unixConnCase(kind string, c *UnixConn, p *poll.Poll) unopened {
	b := make([]byte, 4)
	u := connCase(kind+" *UnixConn", c, p,
		call{"Read", func() error { _, err := c.Read(b); return err }},
		call{"Write", func() error { _, err := c.Write(b); return err }},
		call{"CloseWrite", c.CloseWrite},
	)
	u.zeros = streamZeros(c.Completion, c.CompletionBuffered, c.CompletionFlushed)
	return u
}

func unixListenerCase(kind string, l *UnixListener, p *poll.Poll) unopened {
	return listenerCase(kind+" *UnixListener", l, p, func() error { _, err := l.Accept(); return err })
}

// TestNilAndZeroSockets calls every exported method of every socket type on
// a nil pointer and on a zero value: each one with an error result returns
// an error matching ErrNotOpen (and ErrClosed, as a never-opened socket is a
// closed one), none panics, Fd is -1 and the addresses are nil. A zero
// value's descriptor field is 0, which is stdin: see also
// TestZeroValueLeavesStdin, which watches descriptor 0 itself.
func TestNilAndZeroSockets(t *testing.T) {
	w := newPoller(t)
	p := w.p
	cases := []unopened{
		tcpConnCase("nil", nil, p), tcpConnCase("zero", new(TCPConn), p),
		tcpListenerCase("nil", nil, p), tcpListenerCase("zero", new(TCPListener), p),
		udpConnCase("nil", nil, p), udpConnCase("zero", new(UDPConn), p),
		unixConnCase("nil", nil, p), unixConnCase("zero", new(UnixConn), p),
		unixListenerCase("nil", nil, p), unixListenerCase("zero", new(UnixListener), p),
	}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			// Twice: a failed call must not have changed the state either.
			for range 2 {
				for _, k := range c.calls {
					var err error
					require.NotPanics(t, func() { err = k.f() }, k.name)
					require.ErrorIs(t, err, ErrNotOpen, k.name)
					require.ErrorIs(t, err, ErrClosed, k.name)
					require.ErrorIs(t, err, poll.ErrClosed, k.name)
				}
				require.NotPanics(t, func() { require.Equal(t, -1, c.fd()) })
				for name, f := range c.addrs {
					require.NotPanics(t, func() { require.Nil(t, f(), name) }, name)
				}
				for name, f := range c.zeros {
					require.NotPanics(t, func() { require.True(t, f(), name) }, name)
				}
			}
			// The Poll holds nothing for the socket.
			n, err := p.Poll(w.ev, 0)
			require.NoError(t, err)
			require.Zero(t, n)

			covered := map[string]bool{"Fd": true}
			for _, k := range c.calls {
				covered[k.name] = true
			}
			for name := range c.addrs {
				covered[name] = true
			}
			for name := range c.zeros {
				covered[name] = true
			}
			var missing []string
			for i := range c.methods.NumMethod() {
				if m := c.methods.Method(i).Name; !covered[m] {
					missing = append(missing, m)
				}
			}
			sort.Strings(missing)
			require.Empty(t, missing, "exported methods without a case")
		})
	}
}
