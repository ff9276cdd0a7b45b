//go:build unix

package testsupport

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchCPU starts measuring the process's CPU time (every thread, user and
// system) and returns a function that reports it per op, as the cpu-ns/op
// metric. On a shared machine wall time includes the time the benchmark's
// threads wait for a core; CPU time does not, and for benchmarks of several
// goroutines it also shows what spinning or extra system calls cost. Call
// it after b.ResetTimer, and what it returns once the measured loop is
// done.
func BenchCPU(b *testing.B) (report func()) {
	start := cpuNow()
	return func() {
		b.ReportMetric(float64(cpuNow()-start)/float64(b.N), "cpu-ns/op")
	}
}

// StartBench starts a benchmark's measured loop: it reports allocations,
// resets the timer and starts BenchCPU. Call what it returns once the loop
// is done.
func StartBench(b *testing.B) (report func()) {
	b.ReportAllocs()
	b.ResetTimer()
	return BenchCPU(b)
}

func cpuNow() int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// LatencySettle is how long Latency lets a waiter settle before each
// wake-up: long enough for it to be inside its system call and for the Go
// runtime to have settled what it does with a thread blocked in one (its P
// may be retaken after about 20µs; a sample that races with that is slower
// for reasons that have nothing to do with the wake-up).
const LatencySettle = 50 * time.Microsecond

// Waiter is what Latency measures: something one goroutine blocks in and
// another wakes it from.
type Waiter struct {
	// Wait blocks until woken; it runs in the waiter goroutine only.
	Wait func() error
	// Asleep, if not nil, reports that the waiter has committed to
	// blocking; Latency waits for it before it settles.
	Asleep func() bool
	// Wake wakes the waiter.
	Wake func() error
}

// Latency measures how long a goroutine blocked in w.Wait takes to return
// after another goroutine calls w.Wake, b.N times, and reports the median
// and the 90th and 99th percentiles as median-ns, p90-ns and p99-ns; ns/op
// includes the settle time and means little.
//
// Handshake, per sample: the waiter goroutine returns from its wait, takes
// its timestamp, sends it to the benchmark goroutine and goes straight back
// to waiting. The benchmark goroutine, once it has the stamp, waits for
// w.Asleep (if set) and then busy-waits LatencySettle on its own core, so
// that the waiter is blocked again; only then it takes time.Now() and
// calls w.Wake. The latency is the waiter's timestamp minus that one (both
// monotonic).
func Latency(b *testing.B, w Waiter) {
	var stop atomic.Bool
	stamps := make(chan time.Time, 1)
	errc := make(chan error, 1)
	go func() {
		for {
			err := w.Wait()
			t := time.Now()
			if err != nil || stop.Load() {
				errc <- err
				return
			}
			stamps <- t
		}
	}()
	samples := make([]time.Duration, 0, b.N)
	settle := func() {
		if w.Asleep != nil {
			WaitFor(b, "the waiter to sleep", w.Asleep)
		}
		for t := time.Now(); time.Since(t) < LatencySettle; {
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		settle()
		t0 := time.Now()
		if err := w.Wake(); err != nil {
			b.Fatal(err)
		}
		var t1 time.Time
		select {
		case t1 = <-stamps:
		case err := <-errc:
			b.Fatalf("waiter: %v", err)
		}
		samples = append(samples, t1.Sub(t0))
	}
	b.StopTimer()
	stop.Store(true)
	if err := w.Wake(); err != nil {
		b.Fatal(err)
	}
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	slices.Sort(samples)
	b.ReportMetric(float64(samples[len(samples)/2].Nanoseconds()), "median-ns")
	b.ReportMetric(float64(samples[len(samples)*9/10].Nanoseconds()), "p90-ns")
	b.ReportMetric(float64(samples[len(samples)*99/100].Nanoseconds()), "p99-ns")
}
