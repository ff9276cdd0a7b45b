package netloop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/socket"
)

// dialEcho dials addr, sends msg and checks it comes back.
func dialEcho(t *testing.T, network, addr, msg string) net.Conn {
	t.Helper()
	c, err := net.Dial(network, addr)
	require.NoError(t, err)
	require.NoError(t, c.SetDeadline(time.Now().Add(waitLimit)))
	expectLines(t, c, msg, msg)
	return c
}

// Listener.Close closes one Listener on its own, on every Loop with
// ReusePort: clients are refused from then on, while the Conns it
// accepted and the Group's other Listener go on serving.
func TestListenerClose(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []ListenOption
	}{{"shared", nil}, {"reuseport", []ListenOption{ReusePort()}}} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := NewGroup(GroupConfig{Loops: 2})
			require.NoError(t, err)
			accept := func(l *eventloop.Loop, c *socket.TCPConn) { _, _ = Add(l, c, newEcho(), Config{}) }
			a, err := g.ListenTCP("tcp", "127.0.0.1:0", accept, tc.opts...)
			require.NoError(t, err)
			b, err := g.ListenTCP("tcp", "127.0.0.1:0", accept, tc.opts...)
			require.NoError(t, err)
			runGroup(t, g)
			var held []net.Conn
			for i := range 4 {
				c := dialEcho(t, "tcp", a.Addr().String(), fmt.Sprintf("before %d\n", i))
				defer c.Close()
				held = append(held, c)
			}
			require.NoError(t, a.Close())
			require.ErrorIs(t, a.Close(), ErrClosed)
			for range 8 { // with ReusePort, the kernel would pick any Loop's
				_, err := net.Dial("tcp", a.Addr().String())
				require.ErrorIs(t, err, syscall.ECONNREFUSED)
			}
			for i, c := range held {
				msg := fmt.Sprintf("after %d\n", i)
				expectLines(t, c, msg, msg)
			}
			c := dialEcho(t, "tcp", b.Addr().String(), "the other\n")
			require.NoError(t, c.Close())
		})
	}
}

// A Group serves a Unix-domain socket: clients of package net are
// echoed, the Loops share the connections, and Shutdown drains them and
// removes the socket file.
func TestListenUnix(t *testing.T) {
	g, err := NewGroup(GroupConfig{Loops: 2})
	require.NoError(t, err)
	var mu sync.Mutex
	loops := map[*eventloop.Loop]int{}
	path := filepath.Join(t.TempDir(), "echo.sock")
	ln, err := g.ListenUnix(path, func(l *eventloop.Loop, c *socket.UnixConn) {
		mu.Lock()
		loops[l]++
		mu.Unlock()
		_, _ = Add(l, c, newEcho(), Config{})
	})
	require.NoError(t, err)
	require.Equal(t, path, ln.Addr().String())
	ran := runForShutdown(t, g)
	for i := range 4 {
		c := dialEcho(t, "unix", path, fmt.Sprintf("hello %d\n", i))
		defer c.Close()
	}
	mu.Lock()
	require.Len(t, loops, 2, "round robin hands Unix connections to both Loops")
	mu.Unlock()
	_, err = g.ListenUnix(path, func(*eventloop.Loop, *socket.UnixConn) {})
	require.Error(t, err, "the path is taken")

	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	require.NoError(t, g.Shutdown(ctx), "echo Conns close at once when drained")
	require.NoError(t, (<-ran).err)
	_, err = os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist, "the socket file is removed")
}

// udpEcho sends every datagram back to its sender, and counts the
// datagrams per Loop.
type udpEcho struct {
	mu    sync.Mutex
	loops map[*eventloop.Loop]int
}

func (u *udpEcho) packet(l *eventloop.Loop, pc *socket.UDPConn, data []byte, from net.Addr) {
	u.mu.Lock()
	u.loops[l]++
	u.mu.Unlock()
	_, _ = pc.WriteTo(data, from)
}

// A Group serves UDP: each datagram reaches the handler with its sender,
// on a Loop, and the reply reaches the client of package net. With
// ReusePort each Loop has its own socket on the one port. Closing the
// Listener stops the replies.
func TestListenUDP(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    []ListenOption
		sockets int
	}{{"one socket", nil, 1}, {"reuseport", []ListenOption{ReusePort()}, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := NewGroup(GroupConfig{Loops: 2})
			require.NoError(t, err)
			u := &udpEcho{loops: map[*eventloop.Loop]int{}}
			ln, err := g.ListenUDP("udp", "127.0.0.1:0", u.packet, tc.opts...)
			require.NoError(t, err)
			require.Len(t, ln.parts, tc.sockets)
			runGroup(t, g)
			const clients = 16
			for i := range clients {
				c, err := net.Dial("udp", ln.Addr().String())
				require.NoError(t, err)
				defer c.Close()
				// A datagram may be lost even on loopback (a full socket
				// buffer): send again until the answer comes.
				msg := fmt.Sprintf("datagram %d", i)
				got := make([]byte, 64)
				var n int
				eventually(t, "an answer to "+msg, func() bool {
					if _, err := io.WriteString(c, msg); err != nil {
						return false
					}
					_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
					n, err = c.Read(got)
					return err == nil
				})
				require.Equal(t, msg, string(got[:n]))
			}
			u.mu.Lock()
			for l := range u.loops {
				require.Contains(t, g.Loops()[:tc.sockets], l, "a datagram on a Loop without a socket")
			}
			u.mu.Unlock()
			require.NoError(t, ln.Close())
			require.ErrorIs(t, ln.Close(), ErrClosed)
			// No socket on the port: the kernel answers with an ICMP port
			// unreachable, which a connected client reads as refused.
			// (With a poll(2) backend the socket lives on until the Loop's
			// poll returns: ask until it is gone.)
			c, err := net.Dial("udp", ln.Addr().String())
			require.NoError(t, err)
			defer c.Close()
			eventually(t, "the port to be unreachable", func() bool {
				_, _ = io.WriteString(c, "anyone?")
				_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
				_, err = c.Read(make([]byte, 64))
				return errors.Is(err, syscall.ECONNREFUSED)
			})
		})
	}
}
