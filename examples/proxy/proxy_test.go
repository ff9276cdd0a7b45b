//go:build unix

package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testConfig is a proxy on a free loopback port in front of backend.
func testConfig(backend string) config {
	return config{
		listen: "127.0.0.1:0", backend: backend, loops: 2,
		connectTimeout: 2 * time.Second, drainTimeout: 10 * time.Second,
	}
}

// runProxy runs px and returns a function that drains it and returns
// Run's result; the test's cleanup drains it too, if the test ended first.
func runProxy(t *testing.T, px *proxy) (stop func() error) {
	done := make(chan error, 1)
	go func() { done <- px.Run() }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			px.Stop()
			err = <-done
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// The proxy in this process, on two Loops, in front of examples/echo, in
// each -mode: clients of several sizes get their bytes back intact, a
// drain returns nil, and (TestMain) no goroutine is left behind.
func TestInProcess(t *testing.T) {
	echo := startProc(t, echoBin, "-addr", "127.0.0.1:0")
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			cfg := testConfig(echo.addr)
			cfg.copy = mode == "copy"
			px, err := newProxy(cfg, t.Logf)
			require.NoError(t, err)
			stop := runProxy(t, px)
			sizes := []int{1, 100, 64 << 10, 1 << 20, 3<<20 + 7}
			var wg sync.WaitGroup
			errs := make(chan error, 4*len(sizes))
			for i := range 4 * len(sizes) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c, err := net.Dial("tcp", px.Addr().String())
					if err == nil {
						err = exchange(c, uint64(i), sizes[i%len(sizes)])
						_ = c.Close()
					}
					if err != nil {
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
			require.Zero(t, px.pairs.Load(), "pairs left after the drain")
			px.Stop() // harmless after Run has returned
		})
	}
}

// A client whose backend refuses is reset, in the process too, and the
// pair is counted out.
func TestInProcessRefused(t *testing.T) {
	px, err := newProxy(testConfig(closedPort(t)), t.Logf)
	require.NoError(t, err)
	stop := runProxy(t, px)
	require.ErrorIs(t, cutClient(px.Addr().String()), syscall.ECONNRESET)
	require.Eventually(t, func() bool { return px.pairs.Load() == 0 }, procWait, time.Millisecond, "the pair is counted out")
	require.NoError(t, stop())
}

// Bad flags are refused with an error that names them, before anything
// listens.
func TestBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*config)
		want string
	}{
		{"no port", func(c *config) { c.backend = "localhost" }, "want host:port"},
		{"empty port", func(c *config) { c.backend = "127.0.0.1:" }, "want host:port"},
		{"no host", func(c *config) { c.backend = ":9000" }, "want host:port"},
		{"zero connect timeout", func(c *config) { c.connectTimeout = 0 }, "-connect-timeout"},
		{"negative drain", func(c *config) { c.drainTimeout = -time.Second }, "-drain-timeout"},
		{"negative loops", func(c *config) { c.loops = -1 }, "Loops -1"},
		{"bad listen", func(c *config) { c.listen = "127.0.0.1:99999" }, "99999"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig("127.0.0.1:9")
			tc.edit(&cfg)
			px, err := newProxy(cfg, t.Logf)
			require.ErrorContains(t, err, tc.want)
			require.Nil(t, px)
		})
	}
}

// A pair silent both ways for -idle-timeout is closed, not before the
// timeout. Nothing was in flight, so netloop closes the timed-out Conn
// with a FIN (it resets only a Conn whose close drops bytes): the client
// may read either the end of stream or, if the backend side's close
// reached it first through the Relay, a reset.
func TestIdleTimeout(t *testing.T) {
	echo := startProc(t, echoBin, "-addr", "127.0.0.1:0")
	cfg := testConfig(echo.addr)
	cfg.idleTimeout = 300 * time.Millisecond
	px, err := newProxy(cfg, t.Logf)
	require.NoError(t, err)
	stop := runProxy(t, px)
	c, err := net.Dial("tcp", px.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(procWait)))
	// The pair's last activity is after this write begins: the idle
	// clock cannot have started earlier.
	quiet := time.Now()
	_, err = c.Write([]byte("ping"))
	require.NoError(t, err)
	_, err = io.ReadFull(c, make([]byte, 4))
	require.NoError(t, err)
	err = resetOrEOF(c)
	require.True(t, errors.Is(err, syscall.ECONNRESET) || err == io.EOF, "the pair ends: %v", err)
	require.GreaterOrEqual(t, time.Since(quiet), cfg.idleTimeout-50*time.Millisecond, "reset before the idle timeout")
	require.Eventually(t, func() bool { return px.pairs.Load() == 0 }, procWait, time.Millisecond, "the pair is counted out")
	require.NoError(t, stop())
}
