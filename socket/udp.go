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
type UDPConn struct {
	s      sock
	family int
	local  *net.UDPAddr
	remote *net.UDPAddr // nil unless connected
}

// ListenUDP opens a UDP socket bound to addr ("host:port"; port 0 picks a
// free one, see LocalAddr). network is "udp", "udp4" or "udp6"; "udp" is
// IPv4 unless the host is an IPv6 address.
func ListenUDP(network, addr string) (*UDPConn, error) {
	c, err := openUDP(network, addr, false)
	if err != nil {
		return nil, opError("listen "+network, addr, err)
	}
	return c, nil
}

// DialUDP opens a UDP socket connected to addr: Write sends there, and Read
// receives only from there. Connecting a UDP socket sends nothing, so it
// completes at once.
func DialUDP(network, addr string) (*UDPConn, error) {
	c, err := openUDP(network, addr, true)
	if err != nil {
		return nil, opError("dial "+network, addr, err)
	}
	return c, nil
}

// openUDP creates the socket and binds it to addr, or connects it there.
func openUDP(network, addr string, dial bool) (*UDPConn, error) {
	if network != "udp" && network != "udp4" && network != "udp6" {
		return nil, ErrInvalidNetwork
	}
	ua, err := net.ResolveUDPAddr(network, addr)
	if err != nil {
		return nil, err
	}
	family, err := inetFamily(network, "udp", ua.IP)
	if err != nil {
		return nil, err
	}
	sa, err := inetSockaddr(family, ua.IP, ua.Port, ua.Zone)
	if err != nil {
		return nil, err
	}
	fd, err := sysSocket(family, unix.SOCK_DGRAM, unix.IPPROTO_UDP)
	if err != nil {
		return nil, err
	}
	var remote *net.UDPAddr
	if err = setV6Only(fd, family); err == nil {
		if dial {
			remote = ua
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

// ReadFrom reads one datagram into b and returns its length and sender (a
// *net.UDPAddr). A datagram longer than b is truncated; the rest is lost.
// It returns ErrWouldBlock when none is waiting.
func (c *UDPConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, sa, err := c.s.recvfrom(b)
	if err != nil {
		return 0, nil, err
	}
	return n, netAddr(udpAddr(sa)), nil
}

// WriteTo sends b as one datagram to addr, which must be a *net.UDPAddr of
// the socket's family. It returns ErrWouldBlock when the send buffer is
// full, having sent nothing.
func (c *UDPConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	ua, ok := addr.(*net.UDPAddr)
	if !ok || ua == nil {
		return 0, fmt.Errorf("socket: write to %v: %w: want *net.UDPAddr, have %T", addr, ErrInvalidAddr, addr)
	}
	sa, err := inetSockaddr(c.family, ua.IP, ua.Port, ua.Zone)
	if err != nil {
		return 0, opError("write to", ua.String(), err)
	}
	if err := c.s.sendto(b, sa); err != nil {
		return 0, err
	}
	return len(b), nil
}

// Read reads one datagram from the connected peer (see DialUDP); zero bytes
// is an empty datagram, not EOF. It returns ErrWouldBlock when none is
// waiting.
func (c *UDPConn) Read(b []byte) (int, error) { return c.s.readDatagram(b) }

// Write sends b as one datagram to the connected peer (see DialUDP).
func (c *UDPConn) Write(b []byte) (int, error) { return c.s.write(b) }

// LocalAddr is the socket's own address (a *net.UDPAddr). It stays available
// after Close.
func (c *UDPConn) LocalAddr() net.Addr { return netAddr(c.local) }

// RemoteAddr is the connected peer's address (a *net.UDPAddr), or nil for a
// socket from ListenUDP.
func (c *UDPConn) RemoteAddr() net.Addr { return netAddr(c.remote) }

// Fd returns the descriptor, or -1 after Close. The conn keeps owning it:
// do not close it, and do not use the number after Close.
func (c *UDPConn) Fd() int { return c.s.sysfd() }

// Close deregisters the socket from its Poll, if any, and closes it.
// Closing twice returns an error matching ErrClosed.
func (c *UDPConn) Close() error { return c.s.close() }
