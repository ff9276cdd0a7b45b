//go:build unix

package socket

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/poll"
)

const (
	tokListener poll.Token = iota + 1
	tokClient
	tokServer
)

// tcpPair listens, dials and accepts through w's Poll, and returns the
// client and server ends, both registered (client under tokClient, server
// under tokServer) for Readable|Writable, edge-triggered.
func tcpPair(t *testing.T, w *poller) (*TCPConn, *TCPConn) {
	t.Helper()
	ln, err := ListenTCP("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closeIt(t, ln)
	require.NoError(t, w.p.Register(ln, tokListener, poll.Readable, poll.Edge))

	client, err := DialTCP("tcp", ln.Addr().String())
	require.NoError(t, err)
	closeIt(t, client)
	require.NoError(t, w.p.Register(client, tokClient, poll.Readable|poll.Writable, poll.Edge))

	w.wait(tokListener, poll.Readable)
	server, err := ln.Accept()
	require.NoError(t, err)
	closeIt(t, server)
	_, err = ln.Accept()
	require.ErrorIs(t, err, ErrWouldBlock, "one dial, one connection")
	require.NoError(t, w.p.Register(server, tokServer, poll.Readable|poll.Writable, poll.Edge))

	w.wait(tokClient, poll.Writable)
	require.NoError(t, client.ConnectError())
	return client, server
}

func TestTCPEcho(t *testing.T) {
	w := newPoller(t)
	client, server := tcpPair(t, w)

	require.Equal(t, client.LocalAddr().String(), server.RemoteAddr().String())
	require.Equal(t, client.RemoteAddr().String(), server.LocalAddr().String())
	require.IsType(t, (*net.TCPAddr)(nil), client.LocalAddr())
	// IPv4 in net.IPv4's 16-byte form, as package net gives it.
	require.Len(t, client.LocalAddr().(*net.TCPAddr).IP, net.IPv6len)
	require.Len(t, server.RemoteAddr().(*net.TCPAddr).IP, net.IPv6len)

	msg := bytes.Repeat([]byte("unipoll "), 1000)
	w.writeAll(tokClient, client, msg)
	got := w.readN(tokServer, server, len(msg))
	require.Equal(t, msg, got)
	w.writeAll(tokServer, server, got)
	require.Equal(t, msg, w.readN(tokClient, client, len(msg)))
}

func TestTCPLargeTransferPartialWrites(t *testing.T) {
	w := newPoller(t)
	client, server := tcpPair(t, w)
	msg := make([]byte, 8<<20) // larger than any default socket buffer
	for i := range msg {
		msg[i] = byte(i * 7)
	}
	// Interleave writing and reading on one goroutine: the writer must see
	// ErrWouldBlock with a partial count along the way.
	sawShort := false
	got := make([]byte, 0, len(msg))
	buf := make([]byte, 256<<10)
	rest := msg
	for len(got) < len(msg) {
		if len(rest) > 0 {
			n, err := client.Write(rest)
			rest = rest[n:]
			if err != nil {
				require.ErrorIs(t, err, ErrWouldBlock)
				sawShort = true
			}
		}
		n, err := server.Read(buf)
		got = append(got, buf[:n]...)
		if errors.Is(err, ErrWouldBlock) {
			if len(rest) == 0 {
				w.wait(tokServer, poll.Readable)
			}
			continue
		}
		require.NoError(t, err)
	}
	require.True(t, sawShort, "8 MiB fit into the socket buffers at once")
	require.True(t, bytes.Equal(msg, got))
}

func TestTCPEOFOnPeerClose(t *testing.T) {
	w := newPoller(t)
	client, server := tcpPair(t, w)
	w.writeAll(tokClient, client, []byte("last words"))
	require.NoError(t, client.Close())
	require.Equal(t, "last words", string(w.readN(tokServer, server, 10)))
	w.readEOF(tokServer, server)
	// EOF is sticky.
	_, err := server.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF)
}

func TestTCPCloseWrite(t *testing.T) {
	w := newPoller(t)
	client, server := tcpPair(t, w)
	w.writeAll(tokClient, client, []byte("question"))
	require.NoError(t, client.CloseWrite())

	require.Equal(t, "question", string(w.readN(tokServer, server, 8)))
	w.readEOF(tokServer, server)
	// The server can still answer, and the client can still read.
	w.writeAll(tokServer, server, []byte("answer"))
	require.NoError(t, server.Close())
	require.Equal(t, "answer", string(w.readN(tokClient, client, 6)))
	w.readEOF(tokClient, client)

	_, err := client.Write([]byte("x"))
	require.Error(t, err, "write after CloseWrite")
	require.ErrorIs(t, err, unix.EPIPE)
}

func TestWouldBlockMatchesBoth(t *testing.T) {
	a, b, err := Pair()
	require.NoError(t, err)
	closeIt(t, a)
	closeIt(t, b)

	_, err = a.Read(make([]byte, 8))
	require.ErrorIs(t, err, ErrWouldBlock)
	require.ErrorIs(t, err, unix.EAGAIN)
	require.ErrorIs(t, err, unix.EWOULDBLOCK)
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	require.True(t, ne.Timeout())

	// Fill the send buffer: the last write is short or empty, and says so.
	chunk := make([]byte, 64<<10)
	total := 0
	for {
		n, err := a.Write(chunk)
		total += n
		if err != nil {
			require.ErrorIs(t, err, ErrWouldBlock)
			require.ErrorIs(t, err, unix.EAGAIN)
			require.Less(t, n, len(chunk))
			break
		}
		require.Equal(t, len(chunk), n)
	}
	require.Positive(t, total)
}

func TestDialRefused(t *testing.T) {
	// A port that was just free: listen, note the port, close.
	ln, err := ListenTCP("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	c, err := DialTCP("tcp", addr)
	if err != nil {
		// Some kernels know at once on loopback; that is fine too.
		require.ErrorIs(t, err, unix.ECONNREFUSED)
		return
	}
	closeIt(t, c)
	w := newPoller(t)
	require.NoError(t, w.p.Register(c, tokClient, poll.Writable|poll.Error|poll.Hup, poll.Edge))
	for {
		r := w.wait(tokClient, poll.Writable|poll.Error|poll.Hup)
		err := c.ConnectError()
		if errors.Is(err, ErrWouldBlock) {
			continue // spurious event: still connecting
		}
		require.True(t, r&(poll.Error|poll.Hup) != 0 || r.IsWritable(), "ready %s", r)
		require.ErrorIs(t, err, unix.ECONNREFUSED)
		require.ErrorIs(t, c.ConnectError(), unix.ECONNREFUSED, "the failure is remembered")
		t.Logf("refused connect reported %s", r)
		return
	}
}

func TestSetNoDelay(t *testing.T) {
	w := newPoller(t)
	client, _ := tcpPair(t, w)
	for _, on := range []bool{true, false} {
		require.NoError(t, client.SetNoDelay(on))
		v, err := unix.GetsockoptInt(client.Fd(), unix.IPPROTO_TCP, unix.TCP_NODELAY)
		require.NoError(t, err)
		require.Equal(t, on, v != 0)
	}
}

func TestReusePort(t *testing.T) {
	a, err := ListenTCP("tcp4", "127.0.0.1:0", WithReusePort(), WithBacklog(16))
	require.NoError(t, err)
	closeIt(t, a)
	b, err := ListenTCP("tcp4", a.Addr().String(), WithReusePort())
	require.NoError(t, err, "SO_REUSEPORT lets a second listener bind")
	closeIt(t, b)
	require.Equal(t, a.Addr().String(), b.Addr().String())

	_, err = ListenTCP("tcp4", a.Addr().String())
	require.ErrorIs(t, err, unix.EADDRINUSE, "without it the port is taken")

	c, err := ListenTCP("tcp4", "127.0.0.1:0", nil)
	require.NoError(t, err, "a nil ListenOption is ignored")
	require.NoError(t, c.Close())
}

func TestListenBadNetwork(t *testing.T) {
	_, err := ListenTCP("udp", "127.0.0.1:0")
	require.ErrorIs(t, err, ErrInvalidNetwork)
	_, err = DialTCP("tcp4", "[::1]:1")
	require.Error(t, err)
	_, err = ListenUDP("tcp", "127.0.0.1:0")
	require.ErrorIs(t, err, ErrInvalidNetwork)
}

func TestTCP6(t *testing.T) {
	ln, err := ListenTCP("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	closeIt(t, ln)
	w := newPoller(t)
	require.NoError(t, w.p.Register(ln, tokListener, poll.Readable, poll.Level))
	c, err := DialTCP("tcp", ln.Addr().String())
	require.NoError(t, err)
	closeIt(t, c)
	w.wait(tokListener, poll.Readable)
	s, err := ln.Accept()
	require.NoError(t, err)
	closeIt(t, s)
	require.Equal(t, "::1", s.RemoteAddr().(*net.TCPAddr).IP.String())
	require.Equal(t, c.LocalAddr().String(), s.RemoteAddr().String())
	require.Equal(t, ln.Addr().String(), s.LocalAddr().String())
	require.Equal(t, s.LocalAddr().String(), c.RemoteAddr().String())
}
