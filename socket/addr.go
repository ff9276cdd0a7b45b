//go:build unix

package socket

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/sys/unix"
)

// Conversions between package net's address types, which callers use, and
// the unix.Sockaddr values the system calls take.

// inetEndpoint is an IP address, port and the address family of the socket
// that uses them: what parseInet makes of a network and "host:port".
type inetEndpoint struct {
	family int
	ip     net.IP // nil: the wildcard address
	port   int
	zone   string
}

// parseInet parses addr, "host:port", for network, which is base ("tcp" or
// "udp"), base+"4" or base+"6".
//
// The host must be an IP literal, or empty for the wildcard address, and
// the port a decimal number: a name needs a lookup, which can block, and
// the callers run in event loops, so a name is ErrNeedsResolve rather than
// resolved here (see DialTCP).
//
// The family follows from network and address. Unlike package net, which
// opens a dual-stack IPv6 socket for a wildcard "tcp" address, "tcp" and
// "udp" here mean IPv4 unless the address is an IPv6 one: a socket's family
// is then always visible from its address. Use "tcp6" or "udp6" for an
// IPv6 wildcard. An IPv4-mapped IPv6 address (::ffff:192.0.2.1) is IPv4,
// as package net treats it: accepted by base and base+"4", refused by
// base+"6".
func parseInet(network, base, addr string) (inetEndpoint, error) {
	if network != base && network != base+"4" && network != base+"6" {
		return inetEndpoint{}, fmt.Errorf("%w: %q", ErrInvalidNetwork, network)
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) {
			// Its text repeats the address, which the caller's error
			// already names: "missing port in address" is what is news.
			return inetEndpoint{}, fmt.Errorf("%w: %s", ErrInvalidAddr, ae.Err)
		}
		return inetEndpoint{}, fmt.Errorf("%w: %w", ErrInvalidAddr, err)
	}
	port, err := parsePort(portStr)
	if err != nil {
		return inetEndpoint{}, err
	}
	e := inetEndpoint{port: port}
	var ip netip.Addr
	if host != "" {
		if ip, err = netip.ParseAddr(host); err != nil {
			if strings.ContainsAny(host, ":%") {
				// Meant as an IPv6 literal, or a zone on an IPv4 one.
				return inetEndpoint{}, fmt.Errorf("%w: %w", ErrInvalidAddr, err)
			}
			return inetEndpoint{}, fmt.Errorf("%w: host %q is not an IP address", ErrNeedsResolve, host)
		}
		ip = ip.Unmap()
		e.zone = ip.Zone()
		e.ip = net.IP(ip.AsSlice()) // without the zone, kept apart above
	}
	switch {
	case network == base+"6" && ip.Is4():
		return inetEndpoint{}, fmt.Errorf("%w: %s address %s", ErrInvalidNetwork, network, ip)
	case network == base+"4" && ip.Is6():
		return inetEndpoint{}, fmt.Errorf("%w: %s address %s", ErrInvalidNetwork, network, ip)
	case network == base+"6" || ip.Is6():
		e.family = unix.AF_INET6
	default:
		e.family = unix.AF_INET
	}
	return e, nil
}

// parsePort parses a decimal port number. A port with letters in it is a
// service name ("http"), which needs a lookup.
func parsePort(s string) (int, error) {
	if s == "" {
		return 0, fmt.Errorf("%w: missing port", ErrInvalidAddr)
	}
	n, err := strconv.ParseUint(s, 10, 16)
	if err == nil {
		return int(n), nil
	}
	if strings.IndexFunc(s, unicode.IsLetter) >= 0 {
		return 0, fmt.Errorf("%w: port %q is a service name", ErrNeedsResolve, s)
	}
	return 0, fmt.Errorf("%w: port %q", ErrInvalidAddr, s)
}

// sockaddr is e as a system call takes it.
func (e inetEndpoint) sockaddr() (unix.Sockaddr, error) {
	return inetSockaddr(e.family, e.ip, e.port, e.zone)
}

// inetSockaddr builds the sockaddr for ip:port in family. A nil ip is the
// wildcard address.
func inetSockaddr(family int, ip net.IP, port int, zone string) (unix.Sockaddr, error) {
	switch family {
	case unix.AF_INET:
		sa := &unix.SockaddrInet4{Port: port}
		if ip != nil {
			ip4 := ip.To4()
			if ip4 == nil {
				return nil, fmt.Errorf("%w: %s is not IPv4", ErrInvalidAddr, ip)
			}
			copy(sa.Addr[:], ip4)
		}
		return sa, nil
	case unix.AF_INET6:
		sa := &unix.SockaddrInet6{Port: port, ZoneId: zoneIndex(zone)}
		if ip != nil {
			copy(sa.Addr[:], ip.To16())
		}
		return sa, nil
	}
	return nil, fmt.Errorf("%w: address family %d", ErrInvalidAddr, family)
}

// inetAddr splits an inet sockaddr into ip, port and zone; ok is false for
// any other family.
func inetAddr(sa unix.Sockaddr) (ip net.IP, port int, zone string, ok bool) {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return net.IPv4(sa.Addr[0], sa.Addr[1], sa.Addr[2], sa.Addr[3]), sa.Port, "", true
	case *unix.SockaddrInet6:
		ip := make(net.IP, net.IPv6len)
		copy(ip, sa.Addr[:])
		return ip, sa.Port, zoneName(sa.ZoneId), true
	}
	return nil, 0, "", false
}

// addrPort converts sa to a netip.AddrPort, which holds an address
// without a heap allocation; it is not valid if sa is not an inet address.
func addrPort(sa unix.Sockaddr) netip.AddrPort {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(withZone(netip.AddrFrom16(sa.Addr), sa.ZoneId), uint16(sa.Port))
	}
	return netip.AddrPort{}
}

// withZone gives a the zone of interface index (none for 0).
func withZone(a netip.Addr, index uint32) netip.Addr {
	if z := zoneName(index); z != "" {
		return a.WithZone(z)
	}
	return a
}

// tcpAddrOf converts ap to the *net.TCPAddr that tcpAddr makes of the same
// address (an IPv4 address in net.IPv4's 16-byte form), or nil if ap is
// not valid.
func tcpAddrOf(ap netip.AddrPort) *net.TCPAddr {
	if !ap.IsValid() {
		return nil
	}
	a := ap.Addr()
	var ip net.IP
	if a.Is4() {
		v := a.As4()
		ip = net.IPv4(v[0], v[1], v[2], v[3])
	} else {
		v := a.As16()
		ip = append(make(net.IP, 0, net.IPv6len), v[:]...)
	}
	return &net.TCPAddr{IP: ip, Port: int(ap.Port()), Zone: a.Zone()}
}

// tcpAddr converts sa to a *net.TCPAddr, or nil if it is not an inet
// address (an unconnected socket's peer, for instance).
func tcpAddr(sa unix.Sockaddr) *net.TCPAddr {
	ip, port, zone, ok := inetAddr(sa)
	if !ok {
		return nil
	}
	return &net.TCPAddr{IP: ip, Port: port, Zone: zone}
}

// udpAddr converts sa to a *net.UDPAddr, or nil.
func udpAddr(sa unix.Sockaddr) *net.UDPAddr {
	ip, port, zone, ok := inetAddr(sa)
	if !ok {
		return nil
	}
	return &net.UDPAddr{IP: ip, Port: port, Zone: zone}
}

// unixAddr converts sa to a *net.UnixAddr, or nil.
func unixAddr(sa unix.Sockaddr) *net.UnixAddr {
	if sa, ok := sa.(*unix.SockaddrUnix); ok {
		name := sa.Name
		if name == "@" {
			// x/sys reports an unnamed socket (no path at all) as an
			// abstract one with an empty name.
			name = ""
		}
		return &net.UnixAddr{Name: name, Net: "unix"}
	}
	return nil
}

// zoneIndex turns an IPv6 zone (an interface name or number) into the
// interface index a sockaddr carries; an unknown zone is 0, no zone.
func zoneIndex(zone string) uint32 {
	if zone == "" {
		return 0
	}
	if ifi, err := net.InterfaceByName(zone); err == nil {
		return uint32(ifi.Index)
	}
	n, err := strconv.ParseUint(zone, 10, 32)
	if err != nil {
		return 0
	}
	return uint32(n)
}

// zoneName is the inverse of zoneIndex, falling back to the number.
func zoneName(index uint32) string {
	if index == 0 {
		return ""
	}
	if ifi, err := net.InterfaceByIndex(int(index)); err == nil {
		return ifi.Name
	}
	return strconv.FormatUint(uint64(index), 10)
}

// localName returns the socket's own address, as getsockname reports it.
func localName(fd int) (unix.Sockaddr, error) {
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return nil, os.NewSyscallError("getsockname", err)
	}
	return sa, nil
}

// netAddr returns a as a net.Addr, keeping a nil pointer nil: a nil
// *net.TCPAddr in a net.Addr would compare non-nil.
func netAddr[T interface {
	*net.TCPAddr | *net.UDPAddr | *net.UnixAddr
	net.Addr
}](a T) net.Addr {
	if a == nil {
		return nil
	}
	return a
}
