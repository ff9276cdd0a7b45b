//go:build unix

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/testsupport"
)

// startPair starts examples/echo and the proxy in front of it, with the
// proxy's extra flags, and returns the proxy.
func startPair(t *testing.T, flags ...string) *proc {
	t.Helper()
	echo := startProc(t, echoBin, "-addr", "127.0.0.1:0")
	return startProc(t, proxyBin, append([]string{"-listen", "127.0.0.1:0", "-backend", echo.addr}, flags...)...)
}

// exchange sends size random bytes through c, reads them back and checks
// them, then half-closes and expects the clean end of the echo: what a
// client of the proxy in front of examples/echo sees when every byte
// crossed the proxy both ways and the half-close was forwarded.
func exchange(c net.Conn, seed uint64, size int) error {
	if err := c.SetDeadline(time.Now().Add(procWait)); err != nil {
		return err
	}
	var key [32]byte
	key[0], key[1] = byte(seed), byte(seed>>8)
	msg := make([]byte, size)
	_, _ = rand.NewChaCha8(key).Read(msg) // never fails
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(msg)
		if err == nil {
			err = c.(interface{ CloseWrite() error }).CloseWrite() // a FIN, or over TLS close_notify
		}
		werr <- err
	}()
	got, rerr := io.ReadAll(c)
	if err := <-werr; err != nil {
		return fmt.Errorf("write %d bytes: %w", size, err)
	}
	if rerr != nil {
		return fmt.Errorf("read after %d of %d bytes: %w", len(got), size, rerr)
	}
	if !bytes.Equal(msg, got) {
		return fmt.Errorf("echo of %d bytes differs (%d bytes came back)", size, len(got))
	}
	return nil
}

// modes are the proxy's ways of moving the bytes (-mode).
var modes = []string{"relay", "copy"}

// 200 concurrent clients send 1 MiB each through the proxy to
// examples/echo and get it back intact, then half-close; afterwards the
// proxy holds no more descriptors than before, and SIGTERM ends it with
// status 0. In each -mode.
func TestRelayConcurrentClients(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			px := startPair(t, "-mode", mode)
			before := px.fds(t)
			const clients, size = 200, 1 << 20
			var wg sync.WaitGroup
			errs := make(chan error, clients)
			for i := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c, err := net.Dial("tcp", px.addr)
					if err == nil {
						err = exchange(c, uint64(i), size)
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
			testsupport.WaitForWithin(t, procWait, "the proxy to close every pair's descriptors", func() bool {
				return px.fds(t) <= before
			})
			px.signal(t, syscall.SIGTERM)
			px.wait(t, procWait)
		})
	}
}

// resetOrEOF reads from c until it ends, and returns how: io.EOF for a
// clean end, the error otherwise.
func resetOrEOF(c net.Conn) error {
	_, err := io.Copy(io.Discard, c)
	if err == nil {
		return io.EOF
	}
	return err
}

// A backend that refuses (nothing listens on its port) or never answers
// (a listener whose backlog is full, so its SYNs are dropped): the proxy
// resets the client within the connect timeout, and does not keep its
// descriptors.
func TestBackendDown(t *testing.T) {
	const timeout = 500 * time.Millisecond
	cases := []struct {
		name    string
		backend func(t *testing.T) string
		least   time.Duration // the client is not cut before this
	}{
		{"refused", closedPort, 0},
		{"silent", fullBacklog, timeout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			px := startProc(t, proxyBin, "-listen", "127.0.0.1:0", "-backend", tc.backend(t),
				"-connect-timeout", timeout.String())
			before := px.fds(t)
			start := time.Now()
			err := cutClient(px.addr)
			took := time.Since(start)
			require.ErrorIs(t, err, syscall.ECONNRESET, "the client sees a reset, not a clean end")
			require.GreaterOrEqual(t, took, tc.least-50*time.Millisecond, "cut before the connect timeout")
			// The timer has a wheel's tick of slack and the Loop may be
			// busy: the bound is loose, but far below "never".
			require.Less(t, took, timeout+5*time.Second, "the client waited too long")
			testsupport.WaitForWithin(t, procWait, "the proxy to close the pair's descriptors", func() bool {
				return px.fds(t) <= before
			})
			px.signal(t, syscall.SIGTERM)
			px.wait(t, procWait)
		})
	}
}

// cutClient connects to the proxy, sends a little, and reads until the
// connection ends; it returns how. The proxy may reset the client before
// the client's connect has even seen its handshake complete: Dial then
// reports the reset itself.
func cutClient(addr string) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(procWait)); err != nil {
		return err
	}
	// The reset may come first. The kernel tells it once, to the first
	// call that looks: if that is this write, the read after it would
	// only see the end of stream.
	if _, err := c.Write([]byte("hello")); err != nil {
		return err
	}
	return resetOrEOF(c)
}

// closedPort is an address nothing listens on.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// fullBacklog is a listener that never accepts, its queue of completed
// handshakes filled by connections of the test: the kernel then drops
// further SYNs, so a connect to it neither succeeds nor fails.
func fullBacklog(t *testing.T) string {
	ln, err := listenBacklog(1)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	addr := ln.Addr().String()
	for i := 0; ; i++ {
		require.Less(t, i, 64, "the backlog never filled")
		c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
		if err != nil {
			var ne net.Error
			require.True(t, errors.As(err, &ne) && ne.Timeout(), "a connect to a full backlog times out: %v", err)
			return addr
		}
		t.Cleanup(func() { _ = c.Close() })
	}
}

// SIGTERM drains: a client in the middle of an exchange finishes it,
// intact, while new clients are refused; the proxy exits with status 0
// once the last pair has finished, well before -drain-timeout.
func TestDrainOnSIGTERM(t *testing.T) {
	px := startPair(t, "-drain-timeout", "60s")
	c, err := net.Dial("tcp", px.addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(procWait)))
	// The pair is up: an echo has come back through it.
	_, err = c.Write([]byte("ping"))
	require.NoError(t, err)
	_, err = io.ReadFull(c, make([]byte, 4))
	require.NoError(t, err)

	px.signal(t, syscall.SIGTERM)
	testsupport.WaitForWithin(t, procWait, "the proxy to log its drain", func() bool {
		return bytes.Contains([]byte(px.log()), []byte("proxy: draining"))
	})
	// The listener is closed: a new client is refused.
	testsupport.WaitForWithin(t, procWait, "a new client to be refused", func() bool {
		n, err := net.Dial("tcp", px.addr)
		if err != nil {
			return errors.Is(err, syscall.ECONNREFUSED)
		}
		n.Close()
		return false
	})
	// The client in flight finishes its exchange: 1 MiB each way.
	require.NoError(t, exchange(c, 7, 1<<20))
	took := px.wait(t, procWait)
	require.Less(t, took, 30*time.Second, "the drain waited for -drain-timeout instead of the last pair")
}

// A pair that does not finish is cut at -drain-timeout, and the proxy
// still exits with status 0.
func TestDrainTimeout(t *testing.T) {
	px := startPair(t, "-drain-timeout", "300ms")
	c, err := net.Dial("tcp", px.addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(procWait)))
	_, err = c.Write([]byte("ping"))
	require.NoError(t, err)
	_, err = io.ReadFull(c, make([]byte, 4))
	require.NoError(t, err)
	px.signal(t, syscall.SIGINT)
	px.wait(t, procWait)
	require.Error(t, resetOrEOF(c), "the client's connection ended") // EOF or a reset: the Loops closed it
}
