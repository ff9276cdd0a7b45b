package bench

// How long a goroutine waiting for "something happened" takes to run after
// another goroutine says so, through unipoll and through what a Go program
// uses without it:
//
//   - unipoll: SetReadiness on an edge-triggered Registration wakes a
//     goroutine blocked in Poll(ev, -1) (a waker write, epoll_wait returns);
//   - go-netpoll: a one-byte write to a pipe wakes a goroutine blocked in
//     (*os.File).Read on it, which the Go runtime parks on its own netpoller
//     (what a Go program that waits on descriptors does without unipoll);
//   - chan: a send on a Go channel wakes a goroutine blocked receiving.
//
// Handshake, per sample: the waiter returns from its wait, takes
// time.Now() and sends it back, and goes straight back to waiting; the
// benchmark goroutine, once it has the stamp, busy-waits settle (so the
// waiter is blocked again, in the kernel or parked), then takes time.Now()
// and signals. The latency is the waiter's stamp minus that one. median-ns
// and p90-ns are the result; ns/op includes the settle time and means
// little. The poll package's BenchmarkWakeLatency is the same benchmark
// against a bare eventfd and epoll_wait.

import (
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/unipoll/unipoll/poll"
)

const settle = 50 * time.Microsecond

type waiter struct {
	wait func() error // blocks until woken; waiter goroutine only
	wake func() error
}

func BenchmarkWakeLatency(b *testing.B) {
	b.Run("unipoll", func(b *testing.B) {
		p, err := poll.New()
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		r, s := poll.NewRegistration()
		defer r.Close()
		if err := p.Register(r, 1, poll.Readable, poll.Edge); err != nil {
			b.Fatal(err)
		}
		ev := poll.NewEvents(4)
		if _, err := p.Poll(ev, 0); err != nil { // warm the Poll's buffers
			b.Fatal(err)
		}
		measure(b, waiter{
			wait: func() error {
				for {
					n, err := p.Poll(ev, -1)
					if err != nil || n > 0 {
						return err
					}
				}
			},
			wake: func() error { return s.SetReadiness(poll.Readable) },
		})
	})
	b.Run("go-netpoll", func(b *testing.B) {
		// os.Pipe's descriptors are non-blocking and registered with the
		// runtime's netpoller: Read parks the goroutine, not the thread.
		r, w, err := os.Pipe()
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		defer w.Close()
		var rbuf [64]byte
		one := []byte{1}
		measure(b, waiter{
			wait: func() error {
				_, err := r.Read(rbuf[:])
				return err
			},
			wake: func() error {
				_, err := w.Write(one)
				return err
			},
		})
	})
	b.Run("chan", func(b *testing.B) {
		ch := make(chan struct{}, 1)
		measure(b, waiter{
			wait: func() error { <-ch; return nil },
			wake: func() error { ch <- struct{}{}; return nil },
		})
	})
}

func measure(b *testing.B, w waiter) {
	var stop atomic.Bool
	stamps := make(chan time.Time, 1)
	errc := make(chan error, 1)
	go func() {
		for {
			err := w.wait()
			t := time.Now()
			if err != nil || stop.Load() {
				errc <- err
				return
			}
			stamps <- t
		}
	}()
	samples := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for t := time.Now(); time.Since(t) < settle; {
		}
		t0 := time.Now()
		if err := w.wake(); err != nil {
			b.Fatal(err)
		}
		select {
		case t1 := <-stamps:
			samples = append(samples, t1.Sub(t0))
		case err := <-errc:
			b.Fatalf("waiter: %v", err)
		}
	}
	b.StopTimer()
	stop.Store(true)
	if err := w.wake(); err != nil {
		b.Fatal(err)
	}
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	slices.Sort(samples)
	b.ReportMetric(float64(samples[len(samples)/2].Nanoseconds()), "median-ns")
	b.ReportMetric(float64(samples[len(samples)*9/10].Nanoseconds()), "p90-ns")
}
