//go:build linux

package main

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestProxyContenders starts the backend and each proxy as the proxy
// scenario does, each in its own process, and checks that messages of
// several sizes on several connections come back through it byte for
// byte; then that the idle-pair measurement runs through it.
func TestProxyContenders(t *testing.T) {
	r := testRunner(t)
	backend, name, err := proxyBackend(r)
	require.NoError(t, err)
	contenders, err := r.proxyContenders(backend, name)
	require.NoError(t, err)
	baddr, stopBackend, err := startListening(backend, -1)
	require.NoError(t, err)
	defer stopBackend()
	for _, c := range contenders[:len(contenders)-1] { // the proxies
		t.Run(c.name, func(t *testing.T) {
			port, err := freePort()
			require.NoError(t, err)
			cmd := c.start(-1, port, baddr)
			var out tail
			cmd.Stdout, cmd.Stderr = &out, &out
			require.NoError(t, cmd.Start())
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			defer stopProcess(cmd, exited)
			addr := fmt.Sprintf("127.0.0.1:%d", port)
			require.NoError(t, waitListening(addr, exited, 20*time.Second), out.String())
			errs := make(chan error, 4)
			for i := range 4 {
				go func() { errs <- echoCheck(addr, byte(i)) }()
			}
			for range 4 {
				require.NoError(t, <-errs, out.String())
			}
			kib, err := r.idlePairMemory(c, backend, 20)
			require.NoError(t, err)
			require.Less(t, kib, 1024.0, "more than 1 MiB per idle pair: the measurement is broken")
		})
	}
}

// procRSS reads a process's resident set: this one's.
func TestProcRSS(t *testing.T) {
	kib, err := procRSS(os.Getpid())
	require.NoError(t, err)
	require.Greater(t, kib, int64(100), "a Go test binary holds more than 100 KiB")
}
