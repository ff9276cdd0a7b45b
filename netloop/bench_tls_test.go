package netloop

import (
	"context"
	"crypto/tls"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
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

// BenchmarkTLSHandshake: one op is a TLS 1.3 handshake (ECDSA P-256) of a
// crypto/tls client, tlsWindow of them in flight, with a netloop server
// ("loop": one Loop, its handshake pool) or package net's with crypto/tls
// ("net": a goroutine per connection). The clients run in this process
// too, so the figures include their half: compare the two, not the
// absolute numbers.
func BenchmarkTLSHandshake(b *testing.B) {
	rig := newTLSRig(b)
	b.Run("loop", func(b *testing.B) {
		g, err := NewGroup(GroupConfig{Loops: 1})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = g.Close() })
		h := HandlerFunc(func(c *Conn, in []byte) int { return len(in) })
		ln, err := g.ListenTCP("tcp", "127.0.0.1:0", func(l *eventloop.Loop, s *socket.TCPConn) {
			_, _ = Add(l, s, h, Config{TLS: rig.serverConfig()})
		})
		if err != nil {
			b.Fatal(err)
		}
		testsupport.StartRun(b, waitLimit, func(ctx context.Context) error { return g.Run(ctx, nil) })
		benchHandshakes(b, ln.Addr().String(), rig.clientConfig(tls.VersionTLS13))
	})
	b.Run("net", func(b *testing.B) {
		ln, err := tls.Listen("tcp", "127.0.0.1:0", rig.serverConfig())
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					_ = c.(*tls.Conn).Handshake()
					_, _ = io.Copy(io.Discard, c)
					_ = c.Close()
				}()
			}
		}()
		b.Cleanup(func() { _ = ln.Close(); <-done })
		benchHandshakes(b, ln.Addr().String(), rig.clientConfig(tls.VersionTLS13))
	})
}

// tlsWindow is the handshakes a benchmark keeps in flight.
const tlsWindow = 16

// benchHandshakes runs b.N client handshakes against addr, tlsWindow at
// a time; each client closes once its handshake is done.
func benchHandshakes(b *testing.B, addr string, cfg *tls.Config) {
	b.ResetTimer()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range tlsWindow {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				c, err := tls.Dial("tcp", addr, cfg)
				if err != nil {
					b.Error(err)
					return
				}
				_ = c.Close()
			}
		}()
	}
	wg.Wait()
}
