package netloop

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/internal/testsupport"
)

// Established TLS Conns have no goroutine: once every handshake of
// many Conns, client and server both netloop's, is done, the process has
// the goroutines it had before them (the Loops', the test's), and each
// Conn still carries a line each way, driven by the Loops alone.
func TestTLSEstablishedNoGoroutines(t *testing.T) {
	rig := newTLSRig(t)
	const conns = 200
	addr, _ := serveTLS(t, Config{TLS: rig.serverConfig()}, func() Handler { return newTLSEcho() })
	l := newLoop(t, eventloop.Config{})
	start(t, l, nil)
	base := runtime.NumGoroutine()

	clients := make([]*collect, conns)
	cs := make([]*Conn, conns)
	dialed := make(chan struct{}, conns)
	for i := range clients {
		clients[i] = newCollect()
		require.NoError(t, Dial(context.Background(), l, "tcp", addr, clients[i], Config{TLS: rig.clientConfig(0)},
			func(c *Conn, err error) {
				if err != nil {
					t.Errorf("dial: %v", err)
				}
				cs[i] = c
				dialed <- struct{}{}
			}))
	}
	for range cs {
		<-dialed
	}
	for _, c := range cs {
		require.NotNil(t, c)
	}
	testsupport.WaitFor(t, "the handshakes' goroutines gone", func() bool { return runtime.NumGoroutine() <= base })
	t.Logf("%d established TLS Conns (both ends netloop's): %d goroutines, as before them", conns, runtime.NumGoroutine())
	for i, c := range cs {
		msg := fmt.Sprintf("conn %d\n", i)
		require.NoError(t, c.Async(func(c *Conn) { _, _ = c.WriteString(msg) }))
		require.Equal(t, msg, clients[i].read(t, len(msg)))
	}
	require.LessOrEqual(t, runtime.NumGoroutine(), base, "no goroutine for traffic either")
}
