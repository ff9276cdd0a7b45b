package netloop

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/internal/testsupport"
)

// The dial benchmarks: connects to a loopback listener that accepts and
// closes (a goroutine of the benchmark's), dialWindow in flight:
//
//   - loop: Dial from one Loop; each done closes its Conn and dials again;
//   - net: net.Dialer.DialContext in dialWindow goroutines, each closing
//     its conn and dialing again.
//
// One op is one connect completed and closed by the client. bench/'s
// scenario 9 ("dial") measures the same, each side in a process of its
// own; this one is for profiles and A/B runs of the library alone.
const dialWindow = 64

func BenchmarkDial(b *testing.B) {
	b.Run("loop", benchDialLoop)
	b.Run("net", benchDialNet)
}

// acceptAndClose serves a loopback listener until the benchmark's end.
func acceptAndClose(b *testing.B) string {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	b.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

func benchDialLoop(b *testing.B) {
	addr := acceptAndClose(b)
	l := newLoop(b, eventloop.Config{})
	start(b, l, nil)
	h := HandlerFunc(func(_ *Conn, in []byte) int { return len(in) })
	finished := make(chan error, 1)
	finish := func(err error) {
		select {
		case finished <- err:
		default:
		}
	}
	started, ended := 0, 0 // on the Loop only
	var dial func(l *eventloop.Loop)
	dial = func(l *eventloop.Loop) {
		started++
		err := Dial(context.Background(), l, "tcp", addr, h, Config{}, func(c *Conn, err error) {
			ended++
			if err != nil {
				finish(err)
				return
			}
			c.Close()
			switch {
			case started < b.N:
				dial(l)
			case ended == b.N:
				finish(nil)
			}
		})
		if err != nil {
			finish(err)
		}
	}
	report := testsupport.StartBench(b)
	if err := l.Post(func(l *eventloop.Loop) {
		for range min(dialWindow, b.N) {
			dial(l)
		}
	}); err != nil {
		b.Fatal(err)
	}
	if err := <-finished; err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	report()
}

func benchDialNet(b *testing.B) {
	addr := acceptAndClose(b)
	var d net.Dialer
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, dialWindow)
	report := testsupport.StartBench(b)
	for range dialWindow {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				c, err := d.DialContext(context.Background(), "tcp", addr)
				if err != nil {
					errs <- err
					return
				}
				_ = c.Close()
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	report()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
}
