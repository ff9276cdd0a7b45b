//go:build linux

package main

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTLSFlood floods every TLS echo server with 100 half-open
// connections of each kind, as scenario 10 does, and checks what the
// measurement reads: Go net holds a goroutine per connection, netloop no
// more than an idle server (no half-open connection takes a handshake's
// place) and serves a real client meanwhile; the real client's time is
// taken (finished or given up at the bound); the flood closed,
// the server's goroutines are back where they were and it serves again
// (tlsFloodOnce fails otherwise).
func TestTLSFlood(t *testing.T) {
	r := testRunner(t)
	files, err := writeTLSFiles(r.buildDir)
	require.NoError(t, err)
	const n = 100
	bound := 3 * time.Second
	for _, kind := range floodKinds {
		for _, name := range tlsNames {
			t.Run(kind.name+"/"+name, func(t *testing.T) {
				res, err := r.tlsFloodOnce(files, name, kind, n, bound)
				require.NoError(t, err)
				require.Positive(t, res.goroutines)
				switch name {
				case tlsGoNet:
					require.GreaterOrEqual(t, res.goroutines, n)
				case tlsUnipoll:
					// No half-open connection holds a handshake's place
					// (or goroutine), and a real client is served.
					require.LessOrEqual(t, res.goroutines, 16)
					require.NoError(t, res.probeErr, "a real client beside the flood")
				}
				if res.probeErr != nil {
					require.Equal(t, bound, res.probe, "a client that did not finish counts as the bound")
				} else {
					require.Positive(t, res.probe)
					require.Less(t, res.probe, bound+time.Second) // its deadline was bound; the clock read after it may be late
				}
			})
		}
	}
}

// TestPartialClientHello checks the partial kind's bytes: a handshake
// record announcing 512 bytes, a ClientHello announcing the 508 after its
// header, 100 bytes in all.
func TestPartialClientHello(t *testing.T) {
	b := partialClientHello()
	require.Len(t, b, 100)
	require.Equal(t, []byte{0x16, 0x03, 0x01}, b[:3])
	require.Equal(t, 512, int(b[3])<<8|int(b[4]))
	require.Equal(t, byte(0x01), b[5])
	require.Equal(t, 512-4, int(b[6])<<16|int(b[7])<<8|int(b[8]))
}

// TestTLSHandshakeTimeoutFlag starts tls-unipoll with a short
// -tls-handshake-timeout: a connection that sends nothing is closed by
// the server long before the client's own deadline.
func TestTLSHandshakeTimeoutFlag(t *testing.T) {
	r := testRunner(t)
	files, err := writeTLSFiles(r.buildDir)
	require.NoError(t, err)
	addr, _, stop, err := startListeningPID(r.tlsStart(files, tlsUnipoll, "", "-tls-handshake-timeout", "300ms"), -1)
	require.NoError(t, err)
	defer stop()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(30*time.Second)))
	_, err = c.Read(make([]byte, 1))
	require.Error(t, err)
	require.False(t, errors.Is(err, os.ErrDeadlineExceeded), "the server did not close the connection: %v", err)
}
