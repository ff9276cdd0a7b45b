//go:build unix

package sys_test

// Benchmarks of the selectors' wake-up path against the bare system calls
// it is built on. See bench/README.md at the module root for how to run and
// read them. No benchmark asserts a time.

import (
	"sync/atomic"
	"testing"

	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/sys"
)

// benchWakeEnd is one side of a wake-up: something a goroutine can block on
// (wait) and another goroutine can interrupt (wake).
type benchWakeEnd interface {
	wake() error
	// wait blocks until woken once.
	wait() error
	// poll does not block; it reports whether a wake-up was pending.
	poll() (bool, error)
}

// selectorEnd is a Selector with no descriptors: only its Waker can end a
// Select.
type selectorEnd struct {
	sel sys.Selector
	buf []sys.Event
}

func newSelectorEnd(b *testing.B, backend string) *selectorEnd {
	b.Helper()
	sel, err := sys.New(backend)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sel.Close() })
	return &selectorEnd{sel: sel, buf: make([]sys.Event, 1)}
}

func (s *selectorEnd) wake() error { return s.sel.Wake() }

func (s *selectorEnd) wait() error {
	for {
		_, woken, err := s.sel.Select(s.buf, -1)
		if err != nil || woken {
			return err
		}
	}
}

func (s *selectorEnd) poll() (bool, error) {
	_, woken, err := s.sel.Select(s.buf, 0)
	return woken, err
}

// benchWakeVariants runs fn once per selector backend ("waker-<backend>")
// and once per baseline (on Linux "raw-eventfd").
func benchWakeVariants(b *testing.B, fn func(b *testing.B, newEnd func(b *testing.B) benchWakeEnd)) {
	for _, backend := range sys.Backends() {
		b.Run("waker-"+backend, func(b *testing.B) {
			fn(b, func(b *testing.B) benchWakeEnd { return newSelectorEnd(b, backend) })
		})
	}
	for _, bl := range benchWakeBaselines {
		b.Run(bl.name, func(b *testing.B) {
			fn(b, func(b *testing.B) benchWakeEnd { return bl.open(b) })
		})
	}
}

// benchWakeBaseline is a bare system-call wake-up that this OS has, to
// compare the selectors with: bench_linux_test.go registers raw-eventfd.
type benchWakeBaseline struct {
	name string
	open func(b *testing.B) benchWakeEnd
}

var benchWakeBaselines []benchWakeBaseline

// BenchmarkWake is a cross-goroutine wake-up through a Selector's Wake
// (waker-<backend>) against a bare eventfd write plus epoll_wait
// (raw-eventfd), with the same protocol for both: ping-pong between two
// goroutines and two ends. The benchmark goroutine wakes end A and blocks on
// end B; an echo goroutine blocks on A and, when woken, wakes B. One op is
// one round trip, two wake-ups; ns/wake is half of ns/op.
func BenchmarkWake(b *testing.B) {
	benchWakeVariants(b, func(b *testing.B, newEnd func(b *testing.B) benchWakeEnd) {
		a, c := newEnd(b), newEnd(b)
		var stop atomic.Bool
		errc := make(chan error, 1)
		go func() {
			for {
				if err := a.wait(); err != nil || stop.Load() {
					errc <- err
					return
				}
				if err := c.wake(); err != nil {
					errc <- err
					return
				}
			}
		}()
		roundTrip := func() {
			if err := a.wake(); err != nil {
				b.Fatal(err)
			}
			if err := c.wait(); err != nil {
				b.Fatal(err)
			}
		}
		roundTrip() // warm the selectors' buffers
		cpu := testsupport.StartBench(b)
		for range b.N {
			roundTrip()
		}
		b.StopTimer()
		cpu()
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/wake")
		stop.Store(true)
		if err := a.wake(); err != nil {
			b.Fatal(err)
		}
		if err := <-errc; err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkWakeSelf is the same wake-up without a second goroutine: Wake,
// then a non-blocking Select that must see it. It is the system-call cost of
// the wake path without scheduler noise (write(2) plus epoll_wait(2) on
// epoll; the poll(2) selector also drains its waker).
func BenchmarkWakeSelf(b *testing.B) {
	benchWakeVariants(b, func(b *testing.B, newEnd func(b *testing.B) benchWakeEnd) {
		e := newEnd(b)
		once := func() {
			if err := e.wake(); err != nil {
				b.Fatal(err)
			}
			ok, err := e.poll()
			if err != nil || !ok {
				b.Fatalf("poll after wake = %v, %v; want a wake-up", ok, err)
			}
		}
		once() // warm the selector's buffer
		cpu := testsupport.StartBench(b)
		for range b.N {
			once()
		}
		cpu()
	})
}
