//go:build unix

package main

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// The EventLoop mode passes the same client test as server.go: 50
// concurrent clients, messages up to 1 MiB, half-close at the end; on one
// Loop, on three sharing one listener, and on three with a listener each.
func TestLoopEchoConcurrentClients(t *testing.T) {
	for _, tc := range []struct {
		name      string
		loops     int
		reusePort bool
	}{
		{"one loop", 1, false},
		{"three loops", 3, false},
		{"three loops, reuseport", 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := newLoopServer("127.0.0.1:0", tc.loops, tc.reusePort, t.Logf)
			require.NoError(t, err)
			done := make(chan error, 1)
			go func() { done <- srv.Run() }()
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
			srv.Stop()
			require.NoError(t, <-done)
			srv.Stop() // harmless after Run
		})
	}
}

func TestLoopStopBeforeRun(t *testing.T) {
	srv, err := newLoopServer("127.0.0.1:0", 2, false, t.Logf)
	require.NoError(t, err)
	srv.Stop()
	require.NoError(t, srv.Run())
}

func TestLoopListenError(t *testing.T) {
	srv, err := newLoopServer("127.0.0.1:0", 1, false, t.Logf)
	require.NoError(t, err)
	defer func() { srv.Stop(); require.NoError(t, srv.Run()) }()
	_, err = newLoopServer(srv.Addr().String(), 1, false, t.Logf)
	require.Error(t, err, "port already in use")
}
