//go:build unix

package main

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// clientDeadline bounds each client's whole conversation, so that a broken
// server fails the test instead of hanging it.
const clientDeadline = 60 * time.Second

// serverCase is one way of serving, the Poll mode (server.go) or the
// EventLoop mode (loop_server.go) in one of its layouts; the tests run on
// each.
type serverCase struct {
	name      string
	reusePort bool // a second listen on the port may succeed
	make      func(addr string, logf func(string, ...any)) (echoServer, error)
}

var serverCases = []serverCase{
	{"Poll", false, func(addr string, logf func(string, ...any)) (echoServer, error) {
		return newServer(addr, logf)
	}},
	{"EventLoop/one loop", false, loopCase(1, false)},
	{"EventLoop/three loops", false, loopCase(3, false)},
	{"EventLoop/three loops, reuseport", true, loopCase(3, true)},
}

// loopCase makes a loopServer of loops Loops.
func loopCase(loops int, reusePort bool) func(string, func(string, ...any)) (echoServer, error) {
	return func(addr string, logf func(string, ...any)) (echoServer, error) {
		return newLoopServer(addr, loops, reusePort, logf)
	}
}

// forServers runs f as a subtest per serverCase, with a server of it on a
// free loopback port (which f does not run).
func forServers(t *testing.T, f func(t *testing.T, tc serverCase, srv echoServer)) {
	for _, tc := range serverCases {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := tc.make("127.0.0.1:0", t.Logf)
			require.NoError(t, err)
			f(t, tc, srv)
		})
	}
}

// startServer runs srv and returns a function that stops it and returns
// Run's result.
func startServer(srv echoServer) (stop func() error) {
	done := make(chan error, 1)
	go func() { done <- srv.Run() }()
	return func() error {
		srv.Stop()
		return <-done
	}
}

// 50 concurrent clients, messages up to 1 MiB, half-close at the end.
func TestEchoConcurrentClients(t *testing.T) {
	forServers(t, func(t *testing.T, _ serverCase, srv echoServer) {
		stop := startServer(srv)
		const clients = 50
		sizes := []int{1, 7, 100, 1500, 4096, 65536 + 3, 1 << 20, 13}

		var wg sync.WaitGroup
		errs := make(chan error, clients)
		for i := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := echoClient(srv.Addr().String(), uint64(i), sizes); err != nil {
					errs <- fmt.Errorf("client %d: %w", i, err)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		require.NoError(t, stop())
		// Stop is harmless after Run has returned.
		srv.Stop()
	})
}

// echoClient sends each message and checks its echo byte for byte. It
// writes on a second goroutine while it reads: a 1 MiB message does not fit
// in the socket buffers, and an echo server that is not read from stops
// reading in turn.
func echoClient(addr string, seed uint64, sizes []int) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(clientDeadline)); err != nil {
		return err
	}
	var key [32]byte
	key[0], key[1] = byte(seed), byte(seed>>8)
	src := rand.NewChaCha8(key)
	rng := rand.New(src)
	// Shuffle the order, so the big message lands at a different point for
	// different clients.
	order := rng.Perm(len(sizes))
	for _, k := range order {
		msg := make([]byte, sizes[k])
		_, _ = src.Read(msg) // never fails
		werr := make(chan error, 1)
		go func() {
			_, err := c.Write(msg)
			werr <- err
		}()
		got := make([]byte, len(msg))
		_, rerr := io.ReadFull(c, got)
		if err := <-werr; err != nil {
			return fmt.Errorf("write %d bytes: %w", len(msg), err)
		}
		if rerr != nil {
			return fmt.Errorf("read echo of %d bytes: %w", len(msg), rerr)
		}
		if !bytes.Equal(msg, got) {
			return fmt.Errorf("echo of %d bytes differs", len(msg))
		}
	}
	// Half-close: the server echoes nothing more and closes its side.
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		return err
	}
	rest, err := io.ReadAll(c)
	if err != nil {
		return fmt.Errorf("after CloseWrite: %w", err)
	}
	if len(rest) != 0 {
		return fmt.Errorf("%d unexpected bytes after the last echo", len(rest))
	}
	return nil
}

func TestEchoClientReset(t *testing.T) {
	srv, err := newServer("127.0.0.1:0", t.Logf)
	require.NoError(t, err)
	stop := startServer(srv)
	// A client that sends and vanishes with a reset (linger 0) must not
	// disturb the server or other clients.
	for range 10 {
		c, err := net.Dial("tcp", srv.Addr().String())
		require.NoError(t, err)
		_, err = c.Write(bytes.Repeat([]byte("x"), 100<<10))
		require.NoError(t, err)
		require.NoError(t, c.(*net.TCPConn).SetLinger(0))
		require.NoError(t, c.Close())
	}
	require.NoError(t, echoClient(srv.Addr().String(), 1, []int{10, 1 << 16}))
	require.NoError(t, stop())
}

func TestStopBeforeRun(t *testing.T) {
	forServers(t, func(t *testing.T, _ serverCase, srv echoServer) {
		srv.Stop()
		require.NoError(t, srv.Run())
	})
}

// A second server on a port in use fails; not where reuseport allows it.
func TestListenError(t *testing.T) {
	forServers(t, func(t *testing.T, tc serverCase, srv echoServer) {
		stop := startServer(srv)
		defer func() { require.NoError(t, stop()) }()
		second, err := tc.make(srv.Addr().String(), t.Logf)
		if tc.reusePort {
			require.NoError(t, err, "reuseport lets a second server share the port")
			second.Stop()
			require.NoError(t, second.Run())
			return
		}
		require.Error(t, err, "port already in use")
	})
}
