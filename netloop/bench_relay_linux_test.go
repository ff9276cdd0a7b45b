package netloop

import (
	"context"
	"errors"
	"net"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/socket"
)

// BenchmarkRelay relays 64 KiB messages from one loopback TCP client to
// another through two Conns, splicing and copying in the same run. One op
// is one message. relay-cpu-ns/op is the CPU time of the Loop's thread
// alone (its goroutine is locked to it): what the relay costs, with the
// kernel's work in its system calls; cpu-ns/op is the whole process's,
// the clients' included.
//
// One run of 8 (3000 messages each, 2 cores at load 11 to 14 from other
// work): relay-cpu-ns/op splice 11.6 us, copy 31.8 us (0.37x); the
// process's CPU 0.90x; wall time too noisy at that load to compare.
func BenchmarkRelay(b *testing.B) {
	for _, mode := range []string{"splice", "copy"} {
		b.Run(mode, func(b *testing.B) { benchRelay(b, mode == "copy") })
	}
}

const relayBenchMsg = 64 << 10

func benchRelay(b *testing.B, copy bool) {
	relayForceCopy = copy
	defer func() { relayForceCopy = false }()
	l, err := eventloop.New(eventloop.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	sa, front := benchTCPPair(b)
	sb, back := benchTCPPair(b)
	ca, err := Add(l, sa, HandlerFunc(func(*Conn, []byte) int { return 0 }), Config{})
	if err != nil {
		b.Fatal(err)
	}
	cb, err := Add(l, sb, HandlerFunc(func(*Conn, []byte) int { return 0 }), Config{})
	if err != nil {
		b.Fatal(err)
	}
	if err := Relay(ca, cb); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // the thread's CPU time is the Loop's
		ran <- l.Run(ctx, nil)
	}()
	defer func() {
		cancel()
		if err := <-ran; err != nil && !errors.Is(err, context.Canceled) {
			b.Error(err)
		}
	}()
	loopCPU := func() time.Duration {
		ch := make(chan time.Duration, 1)
		if err := l.Post(func(*eventloop.Loop) {
			var ru unix.Rusage
			_ = unix.Getrusage(unix.RUSAGE_THREAD, &ru)
			ch <- time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}); err != nil {
			b.Fatal(err)
		}
		return <-ch
	}
	msg, buf := make([]byte, relayBenchMsg), make([]byte, relayBenchMsg)
	b.SetBytes(relayBenchMsg)
	loop0 := loopCPU()
	report := testsupport.StartBench(b)
	sent := make(chan error, 1)
	go func() {
		for range b.N {
			if _, err := front.Write(msg); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	for left := int64(b.N) * relayBenchMsg; left > 0; {
		n, err := back.Read(buf[:min(int64(len(buf)), left)])
		if err != nil {
			b.Fatal(err)
		}
		left -= int64(n)
	}
	b.StopTimer()
	report()
	b.ReportMetric(float64(loopCPU()-loop0)/float64(b.N), "relay-cpu-ns/op")
	if err := <-sent; err != nil {
		b.Fatal(err)
	}
	_ = front.Close()
	_ = back.Close()
}

// benchTCPPair is a loopback TCP connection: the accepted end for a Conn,
// the dialed end as a net.Conn.
func benchTCPPair(b *testing.B) (*socket.TCPConn, net.Conn) {
	ln, err := socket.ListenTCP("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = client.Close() })
	for {
		s, err := ln.Accept()
		if err == nil {
			return s, client
		}
		if !errors.Is(err, socket.ErrWouldBlock) {
			b.Fatal(err)
		}
		runtime.Gosched()
	}
}
