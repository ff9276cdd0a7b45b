package poll

// Benchmarks of what one call costs: Poll with ready events, Poll with one
// ready descriptor among N, and SetReadiness (helpers in bench_test.go).

import (
	"fmt"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/sys"
)

// BenchmarkPollReady is the steady state of a busy Poll: one level-triggered
// Registration that is always ready and one level-triggered socketpair end
// that is always readable, so every Poll(ev, 0) returns both. It must not
// allocate.
func BenchmarkPollReady(b *testing.B) {
	for _, backend := range sys.Backends() {
		b.Run(backend, func(b *testing.B) {
			pairs := benchSocketpairs(b, 1)
			p := benchPoll(b, backend)
			sets := benchRegistrations(b, p, 1, Level)
			if err := sets[0].SetReadiness(Readable); err != nil {
				b.Fatal(err)
			}
			if err := p.Register(Fd(pairs[0][0]), 1, Readable, Level); err != nil {
				b.Fatal(err)
			}
			if _, err := unix.Write(pairs[0][1], []byte{1}); err != nil {
				b.Fatal(err)
			}
			ev := NewEvents(8)
			if _, err := p.Poll(ev, 0); err != nil { // warm the Poll's buffers
				b.Fatal(err)
			}
			cpu := testsupport.StartBench(b)
			for range b.N {
				n, err := p.Poll(ev, 0)
				if err != nil || n != 2 {
					b.Fatalf("Poll = %d, %v; want 2 events", n, err)
				}
			}
			cpu()
		})
	}
}

// BenchmarkPollOneReadyAmongN registers N idle descriptors, level-triggered
// for Readable, of which exactly one is readable, and measures one
// Poll(ev, 0). epoll's cost should not depend on N; poll(2)'s is O(N).
//
// The N descriptors are both ends of N/2 unix socketpairs (an idle socket is
// not readable, whichever end). Registering one end each of N socketpairs
// would need 2N descriptors, which for N=10,000 is past this machine's hard
// RLIMIT_NOFILE of 20,000; registering both ends measures the same thing
// (N watched, idle descriptors) with N descriptors.
func BenchmarkPollOneReadyAmongN(b *testing.B) {
	for _, backend := range sys.Backends() {
		for _, n := range []int{10, 1000, 10000} {
			b.Run(fmt.Sprintf("%s/N=%d", backend, n), func(b *testing.B) {
				benchOneReadyAmongN(b, backend, n)
			})
		}
	}
}

func benchOneReadyAmongN(b *testing.B, backend string, n int) {
	benchNofile(b, uint64(n))
	pairs := benchSocketpairs(b, n/2)
	p := benchPoll(b, backend)
	for i, pr := range pairs {
		for j, fd := range pr {
			if err := p.Register(Fd(fd), Token(2*i+j), Readable, Level); err != nil {
				b.Fatal(err)
			}
		}
	}
	// The readable one is the last registered: the worst place for a scan.
	last := pairs[len(pairs)-1]
	if _, err := unix.Write(last[0], []byte{1}); err != nil {
		b.Fatal(err)
	}
	want := Token(n - 1)
	ev := NewEvents(64)
	if _, err := p.Poll(ev, 0); err != nil {
		b.Fatal(err)
	}
	cpu := testsupport.StartBench(b)
	for range b.N {
		got, err := p.Poll(ev, 0)
		if err != nil || got != 1 || ev.At(0).Token != want {
			b.Fatalf("Poll = %d, %v; want 1 event for token %d", got, err, want)
		}
	}
	cpu()
}

// BenchmarkSetReadinessQueued is SetReadiness on a Registration that is
// already queued and already ready: the fast path (one load, no store). The
// parallel variant has every P hitting the same Registration.
func BenchmarkSetReadinessQueued(b *testing.B) {
	setup := func(b *testing.B) *SetReadiness {
		p := benchPoll(b, "")
		s := benchRegistrations(b, p, 1, Edge)[0]
		if err := s.SetReadiness(Readable); err != nil {
			b.Fatal(err)
		}
		return s
	}
	b.Run("serial", func(b *testing.B) {
		s := setup(b)
		cpu := testsupport.StartBench(b)
		for range b.N {
			if err := s.SetReadiness(Readable); err != nil {
				b.Fatal(err)
			}
		}
		cpu()
	})
	b.Run("parallel", func(b *testing.B) {
		s := setup(b)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := s.SetReadiness(Readable); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkSetThenPoll is one edge-triggered Registration made ready and
// then reported: SetReadiness (which queues it) and Poll(ev, 0) (which
// unlinks and reports it). Poll also asks the OS selector, without blocking,
// for descriptor events when the Events buffer has room left, so the
// benchmark runs with a buffer of 1 (user events fill it and, on alternate
// calls when Registrations go first, the selector is skipped) and of 64 (the
// selector is always asked).
func BenchmarkSetThenPoll(b *testing.B) {
	for _, backend := range sys.Backends() {
		for _, capacity := range []int{1, 64} {
			b.Run(fmt.Sprintf("%s/cap=%d", backend, capacity), func(b *testing.B) {
				p := benchPoll(b, backend)
				s := benchRegistrations(b, p, 1, Edge)[0]
				ev := NewEvents(capacity)
				if _, err := p.Poll(ev, 0); err != nil {
					b.Fatal(err)
				}
				cpu := testsupport.StartBench(b)
				for range b.N {
					if err := s.SetReadiness(Readable); err != nil {
						b.Fatal(err)
					}
					n, err := p.Poll(ev, 0)
					if err != nil || n != 1 {
						b.Fatalf("Poll = %d, %v; want 1 event", n, err)
					}
				}
				cpu()
			})
		}
	}
}
