//go:build unix

package socket

import (
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// UDPConn is a non-blocking UDP socket: bound by ListenUDP, or connected to
// one peer by DialUDP. Its methods are safe for concurrent use; a datagram
// is always sent and received whole.
//
// The zero value, like a nil *UDPConn, is a socket that was never opened:
// every method with an error result returns an error matching ErrNotOpen
// (and ErrClosed), Register refuses it, Fd is -1 and the addresses are nil.
// Get a UDPConn from ListenUDP or DialUDP.
type UDPConn struct {
	s      sock
	family int // AF_INET or AF_INET6; 0 only in a conn never opened
	local  *net.UDPAddr
	remote *net.UDPAddr // nil unless connected
}

// ListenUDP opens a UDP socket bound to addr, "host:port": host an IP
// literal, or empty for every address of the family; port a number, 0 to
// pick a free one (see LocalAddr). network is "udp", "udp4" or "udp6";
// "udp" is IPv4 unless the host is an IPv6 address. A host or service name
// is refused with ErrNeedsResolve: see DialTCP for why and what to do.
// Of opts, WithReusePort applies (several sockets bind the same address,
// and on Linux the kernel spreads the senders among them); WithBacklog
// means nothing for datagrams and is ignored.
func ListenUDP(network, addr string, opts ...ListenOption) (*UDPConn, error) {
	c, err := openUDP(network, addr, false, newListenConfig(opts))
	if err != nil {
		return nil, opError("listen "+network, addr, err)
	}
	return c, nil
}

// DialUDP opens a UDP socket connected to addr: Write sends there, and Read
// receives only from there. Connecting a UDP socket sends nothing, so it
// completes at once. addr is "host:port" with IP literals only, as for
// ListenUDP.
func DialUDP(network, addr string) (*UDPConn, error) {
	c, err := openUDP(network, addr, true, listenConfig{})
	if err != nil {
		return nil, opError("dial "+network, addr, err)
	}
	return c, nil
}

// openUDP creates the socket and binds it to addr, or connects it there.
func openUDP(network, addr string, dial bool, cfg listenConfig) (*UDPConn, error) {
	ie, err := parseInet(network, "udp", addr)
	if err != nil {
		return nil, err
	}
	family := ie.family
	sa, err := ie.sockaddr()
	if err != nil {
		return nil, err
	}
	fd, err := sysSocket(family, unix.SOCK_DGRAM, unix.IPPROTO_UDP)
	if err != nil {
		return nil, err
	}
	var remote *net.UDPAddr
	if err = setV6Only(fd, family); err == nil && cfg.reusePort {
		err = os.NewSyscallError("setsockopt(SO_REUSEPORT)", unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1))
	}
	if err == nil {
		if dial {
			remote = &net.UDPAddr{IP: ie.ip, Port: ie.port, Zone: ie.zone}
			err = os.NewSyscallError("connect", unix.Connect(fd, sa))
		} else {
			err = os.NewSyscallError("bind", unix.Bind(fd, sa))
		}
	}
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return newUDPConn(fd, family, remote)
}

// setV6Only makes an IPv6 socket IPv6 only, whatever the system default;
// see inetFamily.
func setV6Only(fd, family int) error {
	if family != unix.AF_INET6 {
		return nil
	}
	return os.NewSyscallError("setsockopt(IPV6_V6ONLY)",
		unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 1))
}

// newUDPConn wraps a UDP descriptor, taking ownership of it: on error it is
// closed.
func newUDPConn(fd, family int, remote *net.UDPAddr) (*UDPConn, error) {
	lsa, err := localName(fd)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &UDPConn{s: newSock(fd), family: family, local: udpAddr(lsa), remote: remote}, nil
}

// sockOf returns c's sock, or nil (a sock that is not open) for a nil c.
func (c *UDPConn) sockOf() *sock {
	if c == nil {
		return nil
	}
	return &c.s
}

// ReadFrom reads one datagram into b and returns its length and sender (a
// *net.UDPAddr). A datagram longer than b is truncated; the rest is lost.
// It returns ErrWouldBlock when none is waiting. Under Edge, a read pass
// ends only at ErrWouldBlock: one read is one datagram, whatever its size.
func (c *UDPConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, sa, err := recvfrom(c.sockOf(), b)
	if err != nil {
		return 0, nil, err
	}
	return n, netAddr(udpAddr(sa)), nil
}

// WriteTo sends b as one datagram to addr, which must be a *net.UDPAddr of
// the socket's family. It returns ErrWouldBlock when the send buffer is
// full, having sent nothing; under Edge, the next Writable event comes
// after that.
func (c *UDPConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	if c == nil || c.family == 0 {
		// Before the address, which a never-opened conn has no family for.
		return 0, notOpenError("write to")
	}
	ua, ok := addr.(*net.UDPAddr)
	if !ok || ua == nil {
		return 0, fmt.Errorf("socket: write to %v: %w: want *net.UDPAddr, have %T", addr, ErrInvalidAddr, addr)
	}
	sa, err := inetSockaddr(c.family, ua.IP, ua.Port, ua.Zone)
	if err != nil {
		return 0, opError("write to", ua.String(), err)
	}
	if err := sendto(c.sockOf(), b, sa); err != nil {
		return 0, err
	}
	return len(b), nil
}

// Read reads one datagram from the connected peer (see DialUDP); zero bytes
// is an empty datagram, not EOF. It returns ErrWouldBlock when none is
// waiting. Under Edge, a read pass ends only at ErrWouldBlock, as for
// ReadFrom.
func (c *UDPConn) Read(b []byte) (int, error) { return readDatagram(c.sockOf(), b) }

// Write sends b as one datagram to the connected peer (see DialUDP), or
// returns ErrWouldBlock, as WriteTo does.
func (c *UDPConn) Write(b []byte) (int, error) { return write(c.sockOf(), b) }

// LocalAddr is the socket's own address (a *net.UDPAddr), or nil for a
// socket never opened. It stays available after Close.
func (c *UDPConn) LocalAddr() net.Addr {
	if c == nil {
		return nil
	}
	return netAddr(c.local)
}

// RemoteAddr is the connected peer's address (a *net.UDPAddr), or nil for a
// socket from ListenUDP (or never opened).
func (c *UDPConn) RemoteAddr() net.Addr {
	if c == nil {
		return nil
	}
	return netAddr(c.remote)
}

// Fd returns the descriptor, or -1 after Close (and for a socket never
// opened). The conn keeps owning it: do not close it, and do not use the
// number after Close.
func (c *UDPConn) Fd() int { return c.sockOf().Sysfd() }

// Close deregisters the socket from its Poll, if any, and closes it.
// Closing twice returns an error matching ErrClosed.
func (c *UDPConn) Close() error { return c.sockOf().Close() }
