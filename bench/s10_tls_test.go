//go:build linux

package main

import (
	"bytes"
	"crypto/tls"
	"io"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTLSServers starts every TLS echo server in its own process, as
// scenario 10 does, and checks, over TLS 1.2 and 1.3, that it echoes
// 16 B, 1 KiB and 64 KiB byte for byte and that it reports its
// goroutines and heap at SIGUSR1: netloop's count stays the same with
// connections open (no goroutine per connection), Go net's grows by one
// per connection.
func TestTLSServers(t *testing.T) {
	r := testRunner(t)
	files, err := writeTLSFiles(r.buildDir)
	require.NoError(t, err)
	for _, name := range tlsNames {
		t.Run(name, func(t *testing.T) {
			stats := filepath.Join(r.buildDir, name+".json")
			addr, pid, stop, err := startListeningPID(r.tlsStart(files, name, stats), -1)
			require.NoError(t, err)
			defer stop()
			before, err := serverStatsOf(pid, stats)
			require.NoError(t, err)
			var open []*tls.Conn
			defer func() {
				for _, c := range open {
					c.Close()
				}
			}()
			for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
				cfg, err := tlsClientConfig(files.CA, v)
				require.NoError(t, err)
				for range 4 {
					c, err := tls.Dial("tcp", addr, cfg)
					require.NoError(t, err, tls.VersionName(v))
					open = append(open, c)
					require.Equal(t, v, c.ConnectionState().Version)
					require.NoError(t, tlsEchoCheck(c))
				}
			}
			want := before.Goroutines
			if name == tlsGoNet {
				want += len(open)
			}
			// A handshake's goroutine (netloop's pool) may still be on its
			// way out after its Conn's first echo: ask until it is gone.
			var after serverStats
			for deadline := time.Now().Add(20 * time.Second); ; {
				after, err = serverStatsOf(pid, stats)
				require.NoError(t, err)
				if after.Goroutines == want || time.Now().After(deadline) {
					break
				}
			}
			require.Equal(t, want, after.Goroutines)
			require.Positive(t, after.HeapAlloc)
		})
	}
}

// tlsEchoCheck sends messages of several sizes on c and checks each echo;
// the big one is written from a second goroutine (it does not fit in the
// socket buffers).
func tlsEchoCheck(c *tls.Conn) error {
	if err := c.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		return err
	}
	for _, size := range []int{16, 1024, 64 << 10} {
		msg := make([]byte, size)
		for i := range msg {
			msg[i] = byte(i * 7)
		}
		werr := make(chan error, 1)
		go func() { _, err := c.Write(msg); werr <- err }()
		got := make([]byte, size)
		if _, err := io.ReadFull(c, got); err != nil {
			return err
		}
		if err := <-werr; err != nil {
			return err
		}
		if !bytes.Equal(got, msg) {
			return io.ErrUnexpectedEOF
		}
	}
	return nil
}

// TestTLSHandshakeLoad runs the handshake load against the netloop TLS
// server: it completes TLS 1.3 handshakes, all of them, and reads the
// server's CPU time.
func TestTLSHandshakeLoad(t *testing.T) {
	r := testRunner(t)
	files, err := writeTLSFiles(r.buildDir)
	require.NoError(t, err)
	addr, pid, stop, err := startListeningPID(r.tlsStart(files, tlsUnipoll, ""), -1)
	require.NoError(t, err)
	defer stop()
	var res handshakeResult
	require.NoError(t, r.child(-1, nil, time.Minute, &res, "handshake", "-addr", addr, "-tls-ca", files.CA,
		"-window", "4", "-warmup", "50ms", "-dur", "300ms", "-pid", strconv.Itoa(pid)))
	require.Positive(t, res.Handshakes)
	require.Zero(t, res.Errors, res.FirstErr)
	require.Positive(t, res.ServerCPU)
}

// TestTLSEchoLoad runs one echo measurement over TLS, the load generator
// in its own process.
func TestTLSEchoLoad(t *testing.T) {
	r := testRunner(t)
	files, err := writeTLSFiles(r.buildDir)
	require.NoError(t, err)
	res, _, err := r.echoOnce(r.tlsStart(files, tlsUnipoll, ""), echoConfig{Conns: 20, Size: 1024}, 50*time.Millisecond, 300*time.Millisecond, countNone, "-tls-ca", files.CA)
	require.NoError(t, err)
	require.Positive(t, res.Msgs)
	require.Positive(t, res.P99)
}
