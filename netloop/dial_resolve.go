package netloop

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/unipoll/unipoll/eventloop"
)

// Name resolution for Dial, off the Loop. A lookup may block for seconds
// (a resolver that does not answer, a slow /etc/nsswitch.conf module), so
// it runs in a goroutine of the dial's, under a context that the dial's
// end cancels; the addresses come back to the Loop with Loop.Post. IP
// literals and port numbers need none of it.

// isLiteral reports whether host and port need no lookup: host an IP
// literal (or empty, the local system), port a number.
func isLiteral(host, port string) bool {
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return false
	}
	if host == "" {
		return true
	}
	_, err := netip.ParseAddr(host)
	return err == nil
}

// startResolve looks host and port up in a goroutine, which hands the
// addresses to the Loop. d.mu is held.
func (d *dial) startResolve(r *net.Resolver, host, port string) {
	if r == nil {
		r = net.DefaultResolver
	}
	// No deadline of the dial's here: the Loop's timer ends the dial at
	// its deadline, and the end cancels the lookup.
	ctx, cancel := context.WithCancel(d.ctx)
	d.unresolv = cancel
	go func() {
		addrs, err := lookup(ctx, r, d.network, host, port)
		_ = d.l.Post(func(*eventloop.Loop) {
			d.step(func() error {
				if err != nil && !d.deadline.IsZero() && !time.Now().Before(d.deadline) {
					// ctx's deadline, which is the dial's, ended the lookup
					// just before the Loop's timer would have.
					return fmt.Errorf("%w (%w)", ErrDialTimeout, err)
				}
				if err != nil {
					return err
				}
				d.addrs = addrs
				return d.next()
			})
		})
	}()
}

// lookup resolves host and port for network into "ip:port" addresses, in
// the resolver's order (the Go resolver sorts them by RFC 6724's rules,
// as the system's getaddrinfo does).
func lookup(ctx context.Context, r *net.Resolver, network, host, port string) ([]string, error) {
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		n, err := r.LookupPort(ctx, network, port)
		if err != nil {
			return nil, err
		}
		p = uint64(n)
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil || host == "" {
		ips = []netip.Addr{ip} // the zero Addr: the local system
	} else {
		ipNet := map[string]string{"tcp": "ip", "tcp4": "ip4", "tcp6": "ip6"}[network]
		if ips, err = r.LookupNetIP(ctx, ipNet, host); err != nil {
			return nil, err
		}
	}
	addrs := make([]string, 0, len(ips))
	for _, ip := range ips {
		if !ip.IsValid() {
			addrs = append(addrs, net.JoinHostPort("", strconv.FormatUint(p, 10)))
			continue
		}
		if network != "tcp6" {
			ip = ip.Unmap()
		}
		addrs = append(addrs, netip.AddrPortFrom(ip, uint16(p)).String())
	}
	if len(addrs) == 0 {
		return nil, &net.DNSError{Err: "no suitable address found", Name: host, IsNotFound: true}
	}
	return addrs, nil
}

// partialDeadline is when one of the remaining addresses must have
// connected, as net.Dialer shares the time: an equal part of what is
// left, but at least 2 s, or all that is left if that is less.
func partialDeadline(now, deadline time.Time, remaining int) time.Time {
	left := deadline.Sub(now)
	part := left / time.Duration(remaining)
	const saneMinimum = 2 * time.Second
	if part < saneMinimum {
		part = min(left, saneMinimum)
	}
	return now.Add(part)
}
