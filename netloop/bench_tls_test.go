package netloop

import (
	"context"
	"crypto/tls"
	"runtime"
	"testing"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/socket"
)

// BenchmarkTLSIdleMemory measures the heap an idle connection keeps: one
// op opens a connection from a netloop client to a netloop echo server
// (both on Loops of this process), sends 16 B and reads them back, and
// leaves it open. The heap grown over b.N of them, after a GC, is
// reported per Conn (each connection is two Conns, one per end); "plain"
// is the same without TLS. Run it with -benchtime=2000x for a figure.
func BenchmarkTLSIdleMemory(b *testing.B) {
	rig := newTLSRig(b)
	b.Run("plain", func(b *testing.B) { benchIdle(b, nil, nil) })
	b.Run("tls13", func(b *testing.B) { benchIdle(b, rig.serverConfig(), rig.clientConfig(tls.VersionTLS13)) })
}

func benchIdle(b *testing.B, server, client *tls.Config) {
	g, err := NewGroup(GroupConfig{Loops: 1})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := g.ListenTCP("tcp", "127.0.0.1:0", func(l *eventloop.Loop, c *socket.TCPConn) {
		_, _ = Add(l, c, echoConn{}, Config{TLS: server})
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = g.Close() })
	testsupport.StartRun(b, waitLimit, func(ctx context.Context) error { return g.Run(ctx, nil) })
	l := newLoop(b, eventloop.Config{})
	start(b, l, nil)
	back := make(chan struct{}, 1)
	h := HandlerFunc(func(c *Conn, in []byte) int {
		if len(in) < 16 {
			return 0
		}
		back <- struct{}{}
		return len(in)
	})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for range b.N {
		if err := Dial(context.Background(), l, "tcp", ln.Addr().String(), h, Config{TLS: client}, func(c *Conn, err error) {
			if err != nil {
				b.Error(err)
				back <- struct{}{}
				return
			}
			_, _ = c.WriteString("0123456789abcdef")
		}); err != nil {
			b.Fatal(err)
		}
		<-back
	}
	b.StopTimer()
	testsupport.WaitFor(b, "the handshakes' goroutines gone", func() bool {
		return handshakesRunning(l) == 0 && handshakesRunning(g.Loops()[0]) == 0
	})
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(2*b.N), "heapB/conn")
}

// handshakesRunning is the number of l's handshake goroutines.
func handshakesRunning(l *eventloop.Loop) int {
	p := &stateOf(l).hs
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running
}
