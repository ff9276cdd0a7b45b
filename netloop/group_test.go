package netloop

import (
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/socket"
)

// runGroup runs g until the test ends.
func runGroup(t *testing.T, g *Group) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx, nil) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.ErrorIs(t, err, context.Canceled)
		case <-time.After(waitLimit):
			t.Fatal("Group.Run did not return")
		}
		require.NoError(t, g.Close())
	})
}

// A Group serves echo clients from every Loop: with a shared listener
// handing connections round robin (exactly in turn) or to the least
// loaded Loop, or with a listener per Loop (SO_REUSEPORT, the kernel
// spreads them).
func TestGroupEcho(t *testing.T) {
	for _, tc := range []struct {
		name    string
		balance Balance
		opts    []ListenOption
	}{
		{"round robin", RoundRobin, nil},
		{"least connections", LeastConnections, nil},
		{"reuseport", RoundRobin, []ListenOption{ReusePort()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const loops, clients = 3, 30
			g, err := NewGroup(GroupConfig{Loops: loops, Balance: tc.balance})
			require.NoError(t, err)
			require.Len(t, g.Loops(), loops)
			perLoop := make([]atomic.Int64, loops)
			index := map[*eventloop.Loop]int{}
			for i, l := range g.Loops() {
				index[l] = i
			}
			ln, err := g.ListenTCP("tcp", "127.0.0.1:0", func(l *eventloop.Loop, c *socket.TCPConn) {
				perLoop[index[l]].Add(1)
				_, err := Add(l, c, newEcho(), Config{})
				require.NoError(t, err)
			}, tc.opts...)
			require.NoError(t, err)
			runGroup(t, g)
			var wg sync.WaitGroup
			held := make(chan net.Conn, clients)
			for i := range clients {
				// One at a time: the connections stay open, so
				// least-connections must spread them evenly too.
				c, err := net.Dial("tcp", ln.Addr().String())
				require.NoError(t, err)
				held <- c
				require.NoError(t, c.SetDeadline(time.Now().Add(waitLimit)))
				msg := fmt.Sprintf("hello %d", i)
				_, err = io.WriteString(c, msg)
				require.NoError(t, err)
				got := make([]byte, len(msg))
				_, err = io.ReadFull(c, got)
				require.NoError(t, err)
				require.Equal(t, msg, string(got))
			}
			close(held)
			for c := range held {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_ = c.Close()
				}()
			}
			wg.Wait()
			counts := make([]int64, loops)
			for i := range perLoop {
				counts[i] = perLoop[i].Load()
			}
			t.Logf("connections per Loop: %v", counts)
			for i, n := range counts {
				if tc.opts == nil {
					require.Equal(t, int64(clients/loops), n, "loop %d", i)
				} else {
					require.Positive(t, n, "loop %d got no connection", i)
				}
			}
			for _, l := range g.Loops() {
				eventually(t, "the Conns to close", func() bool { return Conns(l) == 0 })
			}
		})
	}
}

func TestGroupErrors(t *testing.T) {
	_, err := NewGroup(GroupConfig{Loops: -1})
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = NewGroup(GroupConfig{Balance: 9})
	require.ErrorIs(t, err, ErrInvalidArgument)
	var zero Group
	require.ErrorIs(t, zero.Run(context.Background(), nil), ErrInvalidArgument)
	_, err = zero.ListenTCP("tcp", "127.0.0.1:0", func(*eventloop.Loop, *socket.TCPConn) {})
	require.ErrorIs(t, err, ErrInvalidArgument)
	g, err := NewGroup(GroupConfig{Loops: 2})
	require.NoError(t, err)
	_, err = g.ListenTCP("tcp", "127.0.0.1:0", nil)
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = g.ListenTCP("udp", "127.0.0.1:0", func(*eventloop.Loop, *socket.TCPConn) {})
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = g.ListenUDP("tcp", "127.0.0.1:0", func(*eventloop.Loop, *socket.UDPConn, []byte, net.Addr) {})
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = g.ListenUDP("udp", "127.0.0.1:0", nil)
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = g.ListenUnix("", func(*eventloop.Loop, *socket.UnixConn) {})
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = g.ListenUnix(filepath.Join(t.TempDir(), "s"), nil)
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.NoError(t, g.Close())
	require.ErrorIs(t, g.Close(), ErrClosed)
	require.ErrorIs(t, g.Shutdown(context.Background()), ErrClosed, "Shutdown after Close")
	var noCtx context.Context
	require.ErrorIs(t, g.Shutdown(noCtx), ErrInvalidArgument)
}
