//go:build unix

package main

import (
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/testsupport"
)

// With -tls-cert and -tls-key the proxy terminates TLS: crypto/tls
// clients, TLS 1.2 and 1.3, send through it to examples/echo (which
// speaks plain TCP) and get their bytes back intact; each client's
// close_notify reaches the backend as a half-close, and the backend's end
// comes back as the proxy's close_notify. A drain then returns nil.
func TestTLSTermination(t *testing.T) {
	echo := startProc(t, echoBin, "-addr", "127.0.0.1:0")
	ca := testsupport.NewCA(t)
	_, certFile, keyFile := ca.WritePEM(t, ca.Issue(t, "127.0.0.1"))
	cfg := testConfig(echo.addr)
	var err error
	cfg.tls, err = loadTLS(certFile, keyFile)
	require.NoError(t, err)
	px, err := newProxy(cfg, t.Logf)
	require.NoError(t, err)
	stop := runProxy(t, px)
	sizes := []int{1, 100, 64 << 10, 1<<20 + 7}
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(sizes))
	for i := range 2 * len(sizes) {
		v := []uint16{tls.VersionTLS12, tls.VersionTLS13}[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := &net.Dialer{Timeout: procWait}
			c, err := tls.DialWithDialer(d, "tcp", px.Addr().String(), &tls.Config{RootCAs: ca.Pool(), MinVersion: v, MaxVersion: v})
			if err == nil {
				err = exchange(c, uint64(i), sizes[i%len(sizes)])
				_ = c.Close()
			}
			if err != nil {
				errs <- fmt.Errorf("client %d (%s): %w", i, tls.VersionName(v), err)
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

	_, err = loadTLS(certFile, "")
	require.ErrorIs(t, err, errTLSFlags)
}
