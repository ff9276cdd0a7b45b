//go:build unix

package socket

import (
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// TCPListener is a non-blocking TCP listening socket. It is readable when a
// connection is waiting to be accepted. Its methods are safe for concurrent
// use.
//
// The zero value, like a nil *TCPListener, is a listener that was never
// opened: every method with an error result returns an error matching
// ErrNotOpen (and ErrClosed), Register refuses it, Fd is -1 and Addr is
// nil. Get a TCPListener from ListenTCP, AdoptTCPListener or
// FileTCPListener.
type TCPListener struct {
	s    sock
	addr *net.TCPAddr
}

// ListenTCP opens a listener on addr, "host:port": host an IP literal, or
// empty for every address of the family; port a number, 0 to pick a free
// one (see Addr). network is "tcp", "tcp4" or "tcp6"; "tcp" is IPv4 unless
// the host is an IPv6 address. A host or service name is refused with
// ErrNeedsResolve, as by DialTCP. SO_REUSEADDR is always set, so a
// restarted server can bind while old connections linger in TIME_WAIT.
func ListenTCP(network, addr string, opts ...ListenOption) (*TCPListener, error) {
	ln, err := listenTCP(network, addr, newListenConfig(opts))
	if err != nil {
		return nil, opError("listen "+network, addr, err)
	}
	return ln, nil
}

func listenTCP(network, addr string, cfg listenConfig) (*TCPListener, error) {
	e, err := tcpSocket(network, addr)
	if err != nil {
		return nil, err
	}
	family, sa, fd := e.family, e.sa, e.fd
	if err := setupListener(fd, family, sa, cfg); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return newTCPListener(fd)
}

// setupListener sets the options, binds and listens.
func setupListener(fd, family int, sa unix.Sockaddr, cfg listenConfig) error {
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		return os.NewSyscallError("setsockopt(SO_REUSEADDR)", err)
	}
	if cfg.reusePort {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
			return os.NewSyscallError("setsockopt(SO_REUSEPORT)", err)
		}
	}
	if family == unix.AF_INET6 {
		// IPv6 only, whatever the system default: the family of a socket
		// stays what its address says (see inetFamily).
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 1); err != nil {
			return os.NewSyscallError("setsockopt(IPV6_V6ONLY)", err)
		}
	}
	if err := unix.Bind(fd, sa); err != nil {
		return os.NewSyscallError("bind", err)
	}
	if err := unix.Listen(fd, cfg.backlog); err != nil {
		return os.NewSyscallError("listen", err)
	}
	return nil
}

// newTCPListener wraps a listening descriptor, taking ownership of it: on
// error it is closed.
func newTCPListener(fd int) (*TCPListener, error) {
	sa, err := localName(fd)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &TCPListener{s: newSock(fd), addr: tcpAddr(sa)}, nil
}

// sockOf returns l's sock, or nil (a sock that is not open) for a nil l.
func (l *TCPListener) sockOf() *sock {
	if l == nil {
		return nil
	}
	return &l.s
}

// Accept takes one pending connection, non-blocking and close-on-exec. With
// none pending it returns ErrWouldBlock: with edge-triggered registration,
// accept until then, since the next event comes only with a new connection.
// Running out of descriptors is an error matching unix.EMFILE or
// unix.ENFILE; the connection stays queued, and under Edge no new event
// comes for it: accept again once descriptors are free, until
// ErrWouldBlock.
func (l *TCPListener) Accept() (*TCPConn, error) {
	fd, remote, err := accept(l.sockOf())
	if err != nil {
		return nil, acceptError(err, l.Addr())
	}
	return newTCPConn(fd, remote)
}

// acceptError wraps a system call's failure with the listener's address;
// ErrWouldBlock and a listener that is not open need no more context.
func acceptError(err error, addr net.Addr) error {
	if _, ok := err.(*stateError); ok || err == ErrWouldBlock {
		return err
	}
	where := ""
	if addr != nil {
		where = addr.String()
	}
	return opError("accept", where, err)
}

// Addr is the address the listener is bound to, with the actual port when
// port 0 was asked for; nil for a listener never opened. It stays available
// after Close.
func (l *TCPListener) Addr() net.Addr {
	if l == nil {
		return nil
	}
	return netAddr(l.addr)
}

// Fd returns the descriptor, or -1 after Close (and for a listener never
// opened). The listener keeps owning it: do not close it, and do not use
// the number after Close.
func (l *TCPListener) Fd() int { return l.sockOf().Sysfd() }

// Close deregisters the listener from its Poll, if any, and closes it.
// Connections already accepted are not affected. Closing twice returns an
// error matching ErrClosed.
func (l *TCPListener) Close() error { return l.sockOf().Close() }

// tcpEndpoint is a parsed TCP address and a socket of its family.
type tcpEndpoint struct {
	addr   *net.TCPAddr
	family int
	sa     unix.Sockaddr
	fd     int
}

// tcpSocket parses a TCP network and address (IP literals only, see
// parseInet) and opens a socket of the family they call for: what dialing
// and listening share. Nothing is opened for an address it refuses.
func tcpSocket(network, addr string) (tcpEndpoint, error) {
	ie, err := parseInet(network, "tcp", addr)
	if err != nil {
		return tcpEndpoint{}, err
	}
	e := tcpEndpoint{addr: &net.TCPAddr{IP: ie.ip, Port: ie.port, Zone: ie.zone}, family: ie.family}
	if e.sa, err = ie.sockaddr(); err != nil {
		return tcpEndpoint{}, err
	}
	if e.fd, err = sysSocket(e.family, unix.SOCK_STREAM, unix.IPPROTO_TCP); err != nil {
		return tcpEndpoint{}, err
	}
	return e, nil
}
