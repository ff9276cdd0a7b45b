package netloop

import (
	"context"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/socket"
)

// The echo benchmarks: echoPairs socket pairs, a client goroutine that
// writes a 16-byte message to each and reads every echo back (blocking),
// and a server that echoes through:
//
//   - raw: Poll directly, a slice of connections indexed by token, each
//     event handled by one read and one write (a read shorter than the
//     buffer ends the pass, as the Loop's Conns do);
//   - loop: a Loop, the same handler code as a SourceHandler per socket;
//   - conn: a Loop with a Conn per socket (what examples/echo -mode loop
//     does): its read pass, write queue and flush.
//
// One op is one message echoed; raw and loop do the same system calls, so
// their difference is what the Loop adds per event.
const (
	echoPairs = 8
	echoSize  = 16
)

type echoPair struct {
	server *socket.UnixConn
	client int // blocking descriptor
}

func echoSetup(b *testing.B) []echoPair {
	pairs := make([]echoPair, echoPairs)
	for i := range pairs {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err != nil {
			b.Fatal(err)
		}
		unix.CloseOnExec(fds[0])
		unix.CloseOnExec(fds[1])
		s, err := socket.AdoptUnixConn(fds[0])
		if err != nil {
			b.Fatal(err)
		}
		pairs[i] = echoPair{server: s, client: fds[1]}
	}
	b.Cleanup(func() {
		for _, p := range pairs {
			_ = p.server.Close()
			_ = unix.Close(p.client)
		}
	})
	return pairs
}

// cpuNow is the process's CPU time (user and system, every thread).
func cpuNow() time.Duration {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// echoClient runs b.N messages through the pairs, and reports the
// process's CPU time per message (cpu-ns/op): on a shared machine wall
// time includes the time a thread waits for a core, CPU time does not.
func echoClient(b *testing.B, pairs []echoPair) {
	cpu := cpuNow()
	defer func() { b.ReportMetric(float64(cpuNow()-cpu)/float64(b.N), "cpu-ns/op") }()
	msg := make([]byte, echoSize)
	buf := make([]byte, echoSize)
	for sent := 0; sent < b.N; {
		k := min(len(pairs), b.N-sent)
		for _, p := range pairs[:k] {
			if _, err := unix.Write(p.client, msg); err != nil {
				b.Fatal(err)
			}
		}
		for _, p := range pairs[:k] {
			for got := 0; got < echoSize; {
				n, err := unix.Read(p.client, buf[got:])
				if err != nil || n == 0 {
					b.Fatalf("read echo: %d, %v", n, err)
				}
				got += n
			}
		}
		sent += k
	}
}

// echoOnce is the handler code raw and loop share: one read, one write.
func echoOnce(c *socket.UnixConn, buf []byte) {
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, err := c.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil || n < len(buf) {
			return
		}
	}
}

type echoSource struct {
	c   *socket.UnixConn
	buf []byte
}

func (s *echoSource) Ready(l *eventloop.Loop, ev poll.Event) eventloop.Action {
	echoOnce(s.c, s.buf)
	return eventloop.Keep
}

type echoConn struct{}

func (echoConn) Data(c *Conn, in []byte) int {
	n, _ := c.Write(in)
	return n
}

func BenchmarkEcho(b *testing.B) {
	b.Run("raw", func(b *testing.B) {
		pairs := echoSetup(b)
		p, err := poll.New()
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		stop, stopSet := poll.NewRegistration()
		defer stop.Close()
		const stopTok = poll.Token(1 << 20)
		if err := p.Register(stop, stopTok, poll.Readable, poll.Edge); err != nil {
			b.Fatal(err)
		}
		conns := make([]*socket.UnixConn, len(pairs))
		for i, pr := range pairs {
			conns[i] = pr.server
			if err := p.Register(pr.server, poll.Token(i), poll.Readable, poll.Edge); err != nil {
				b.Fatal(err)
			}
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			events := poll.NewEvents(eventloop.DefaultEvents)
			buf := make([]byte, 64<<10)
			for {
				n, err := p.Poll(events, -1)
				if err != nil {
					return
				}
				for i := range n {
					ev := events.At(i)
					if ev.Token == stopTok {
						return
					}
					echoOnce(conns[ev.Token], buf)
				}
			}
		}()
		b.ReportAllocs()
		b.ResetTimer()
		echoClient(b, pairs)
		b.StopTimer()
		_ = stopSet.SetReadiness(poll.Readable)
		<-done
	})
	for _, mode := range []string{"loop", "conn"} {
		b.Run(mode, func(b *testing.B) {
			pairs := echoSetup(b)
			l, err := eventloop.New(eventloop.Config{})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			buf := make([]byte, 64<<10)
			for _, pr := range pairs {
				if mode == "conn" {
					_, err = Add(l, pr.server, echoConn{}, Config{})
				} else {
					_, err = l.Add(pr.server, poll.Readable, poll.Edge, &echoSource{pr.server, buf})
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- l.Run(ctx, nil) }()
			b.ReportAllocs()
			b.ResetTimer()
			echoClient(b, pairs)
			b.StopTimer()
			cancel()
			if err := <-done; err != nil && err != context.Canceled {
				b.Fatal(err)
			}
		})
	}
}
