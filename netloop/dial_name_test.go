package netloop

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/socket"
)

// dnsStub is a DNS server on a loopback UDP port, for a Resolver whose
// Dial points at it: it answers A and AAAA queries with addrs (an empty
// AAAA answer for IPv4 addresses only), or with rcode, once release is
// closed; until then it holds every query, so a lookup hangs.
type dnsStub struct {
	pc      net.PacketConn
	queries atomic.Int32
	open    atomic.Int32 // the resolver's conns to the stub not yet closed
	release chan struct{}
	addrs   []netip.Addr
	rcode   byte
}

// newDNSStub starts a stub that the test stops at its end.
func newDNSStub(t *testing.T, rcode byte, addrs ...netip.Addr) *dnsStub {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	require.NoError(t, err)
	s := &dnsStub{pc: pc, release: make(chan struct{}), addrs: addrs, rcode: rcode}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.serve()
	}()
	t.Cleanup(func() {
		// Answer what is held, and wait until the resolver has closed
		// its conns: its goroutines outlive a cancelled lookup until
		// their query is answered (or times out, in seconds).
		s.answer()
		eventually(t, "the resolver's conns closed", func() bool { return s.open.Load() == 0 })
		_ = pc.Close()
		wg.Wait()
	})
	return s
}

// answer lets the stub answer (once is enough).
func (s *dnsStub) answer() {
	select {
	case <-s.release:
	default:
		close(s.release)
	}
}

// resolver is a pure-Go Resolver that asks only the stub.
func (s *dnsStub) resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "udp4", s.pc.LocalAddr().String())
		if err != nil {
			return nil, err
		}
		s.open.Add(1)
		return &stubConn{UDPConn: c.(*net.UDPConn), s: s}, nil
	}}
}

// stubConn is a resolver's conn to the stub, counted until closed. It
// is a net.PacketConn, as the resolver needs to speak UDP on it.
type stubConn struct {
	*net.UDPConn
	s    *dnsStub
	once sync.Once
}

func (c *stubConn) Close() error {
	c.once.Do(func() { c.s.open.Add(-1) })
	return c.UDPConn.Close()
}

func (s *dnsStub) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := s.pc.ReadFrom(buf)
		if err != nil {
			return
		}
		s.queries.Add(1)
		<-s.release
		if reply := s.reply(buf[:n]); reply != nil {
			_, _ = s.pc.WriteTo(reply, from)
		}
	}
}

// reply builds the answer to query q: its header and question, then one
// record per address of the asked type (A 1, AAAA 28), as RFC 1035
// section 4.1 lays a message out.
func (s *dnsStub) reply(q []byte) []byte {
	i := 12
	for i < len(q) && q[i] != 0 {
		i += int(q[i]) + 1
	}
	if i+5 > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[i+1:])
	r := append([]byte(nil), q[:i+5]...)
	r[2] = 0x81           // a response; recursion desired
	r[3] = 0x80 | s.rcode // recursion available
	binary.BigEndian.PutUint16(r[4:], 1)
	binary.BigEndian.PutUint32(r[8:], 0) // no authority, no additional records
	var n uint16
	for _, a := range s.addrs {
		if s.rcode != 0 || (qtype == 1) != a.Is4() || qtype != 1 && qtype != 28 {
			continue
		}
		ip := a.AsSlice()
		r = append(r, 0xc0, 12) // the name: a pointer to the question's
		r = binary.BigEndian.AppendUint16(r, qtype)
		r = binary.BigEndian.AppendUint16(r, 1) // class IN
		r = binary.BigEndian.AppendUint32(r, 60)
		r = binary.BigEndian.AppendUint16(r, uint16(len(ip)))
		r = append(r, ip...)
		n++
	}
	binary.BigEndian.PutUint16(r[6:], n)
	return r
}

const stubName = "dial-test.unipoll.example"

// A name is resolved off the Loop: Dial, called from a handler, returns
// while the lookup hangs, and the Loop runs a posted function meanwhile
// (before done). When the answer comes, its addresses are tried in
// turn: the first refuses, the second connects.
func TestDialResolveDoesNotBlockLoop(t *testing.T) {
	for _, network := range []string{"tcp", "tcp4"} {
		t.Run(network, func(t *testing.T) {
			l := newLoop(t, eventloop.Config{})
			start(t, l, nil)
			ln := listenTCP(t)
			acceptAll(t, ln)
			port := ln.Addr().(*net.TCPAddr).Port
			refusing := netip.MustParseAddr("127.0.0.2") // the listener is on 127.0.0.1 only
			stub := newDNSStub(t, 0, refusing, netip.MustParseAddr("127.0.0.1"))
			d := Dialer{Resolver: stub.resolver(), Timeout: waitLimit}
			r := newDialResult()
			addr := net.JoinHostPort(stubName, itoa(port))
			dialed := make(chan error, 1)
			require.NoError(t, l.Post(func(l *eventloop.Loop) {
				dialed <- d.Dial(context.Background(), l, network, addr, newEcho(), r.done)
			}))
			require.NoError(t, <-dialed)
			eventually(t, "the stub asked", func() bool { return stub.queries.Load() > 0 })
			ran := make(chan int32, 1)
			require.NoError(t, l.Post(func(*eventloop.Loop) { ran <- r.calls.Load() }))
			select {
			case calls := <-ran:
				require.Zero(t, calls, "the dial ended before the lookup was answered")
			case <-time.After(waitLimit):
				t.Fatal("the Loop did not run a posted function while a name was resolved")
			}
			stub.answer()
			o := r.wait(t, l)
			require.NoError(t, o.err)
			require.Equal(t, "127.0.0.1:"+itoa(port), o.c.Stream().(*socket.TCPConn).RemoteAddr().String())
			require.NoError(t, o.c.Async(func(c *Conn) { c.Close() }))
		})
	}
}

// A lookup that never answers ends at the Dialer's Timeout; the
// resolver's goroutine ends with it (goleak checks).
func TestDialResolveTimeout(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	start(t, l, nil)
	stub := newDNSStub(t, 0)
	d := Dialer{Resolver: stub.resolver(), Timeout: 200 * time.Millisecond}
	r := newDialResult()
	require.NoError(t, d.Dial(context.Background(), l, "tcp4", stubName+":80", newEcho(), r.done))
	o := r.wait(t, l)
	require.ErrorIs(t, o.err, ErrDialTimeout)
	require.Positive(t, stub.queries.Load())
}

// A name that does not exist: the resolver's *net.DNSError, kept.
func TestDialResolveFails(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	start(t, l, nil)
	stub := newDNSStub(t, 3) // NXDOMAIN
	stub.answer()
	r := newDialResult()
	d := Dialer{Resolver: stub.resolver()}
	require.NoError(t, d.Dial(context.Background(), l, "tcp4", stubName+":80", newEcho(), r.done))
	o := r.wait(t, l)
	var dnsErr *net.DNSError
	require.ErrorAs(t, o.err, &dnsErr)
	require.True(t, dnsErr.IsNotFound, "%v", o.err)
	require.Nil(t, o.c)
}

// A service name is looked up too (off the Loop, with the host).
func TestDialServiceName(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	start(t, l, nil)
	r := newDialResult()
	require.NoError(t, Dial(context.Background(), l, "tcp", "127.0.0.1:no-such-service-unipoll", newEcho(), Config{}, r.done))
	o := r.wait(t, l)
	var dnsErr *net.DNSError
	require.ErrorAs(t, o.err, &dnsErr)
}
