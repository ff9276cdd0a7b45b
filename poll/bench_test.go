package poll

// Benchmarks of the poll package, with the baselines that need no
// third-party code (a Go channel here, a raw eventfd with epoll_wait in
// bench_linux_test.go) run side by side in the same `go test -bench` so that
// one run compares them. See bench/README.md at the module root for how to
// run and read them.
//
// They live in package poll (not poll_test) only so that the sleep-sensitive
// benchmarks can see the readiness queue's sleep word (p.queue.sleep), the
// one reliable sign that a goroutine in Poll has committed to blocking.
// Every helper here is prefixed with "bench" to stay clear of the helpers of
// the package's tests.
//
// No benchmark asserts a time: the targets are in the report, not in code.

import (
	"fmt"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/cpu"
	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/sys"
)

// ---------------------------------------------------------------------------
// Helpers

// benchPoll opens a Poll on backend, closed when the benchmark ends.
func benchPoll(b *testing.B, backend string) *Poll {
	b.Helper()
	p, err := NewWithConfig(Config{Backend: backend})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Close() })
	return p
}

// benchSocketpairs opens n non-blocking unix socketpairs, closed when the
// benchmark ends. Open them before the Poll, so that (cleanups run last in,
// first out) the Poll is closed first.
func benchSocketpairs(b *testing.B, n int) [][2]int {
	b.Helper()
	out := make([][2]int, 0, n)
	b.Cleanup(func() {
		for _, p := range out {
			_ = unix.Close(p[0])
			_ = unix.Close(p[1])
		}
	})
	for range n {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err != nil {
			b.Fatalf("socketpair #%d: %v", len(out), err)
		}
		out = append(out, [2]int(fds))
		for _, fd := range fds {
			if err := unix.SetNonblock(fd, true); err != nil {
				b.Fatal(err)
			}
		}
	}
	return out
}

// benchRegistrations registers n Registrations for Readable in mode opts,
// with tokens 0..n-1, and returns their SetReadiness.
func benchRegistrations(b *testing.B, p *Poll, n int, opts PollOpt) []*SetReadiness {
	b.Helper()
	sets := make([]*SetReadiness, n)
	for i := range sets {
		r, s := NewRegistration()
		b.Cleanup(func() { _ = r.Close() })
		if err := p.Register(r, Token(i), Readable, opts); err != nil {
			b.Fatal(err)
		}
		sets[i] = s
	}
	return sets
}

// benchNofile makes sure the process may open `need` more descriptors:
// it raises the soft RLIMIT_NOFILE up to the hard limit (Go already does this
// at start-up, but an embedding test runner may not have), and then the hard
// limit if the process is privileged. It skips the benchmark, saying why,
// when neither is enough.
func benchNofile(b *testing.B, need uint64) {
	b.Helper()
	const margin = 256 // the test binary's own descriptors, the Poll's, stdio
	need += margin
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		b.Skipf("getrlimit(RLIMIT_NOFILE): %v", err)
	}
	cur, hard := uint64(rl.Cur), uint64(rl.Max)
	if cur >= need {
		return
	}
	if hard >= need {
		rl.Cur = rl.Max
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
			b.Skipf("needs %d descriptors; raising the soft RLIMIT_NOFILE to the hard limit %d failed: %v", need, hard, err)
		}
		return
	}
	benchSetLimit(&rl.Cur, &rl.Max, need)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		b.Skipf("needs %d descriptors but RLIMIT_NOFILE is %d (hard %d) and cannot be raised: %v", need, cur, hard, err)
	}
}

// benchSetLimit sets both limits of an Rlimit, whose fields are uint64 on
// some systems and int64 on others.
func benchSetLimit[T int64 | uint64](cur, hard *T, v uint64) { *cur, *hard = T(v), T(v) }

// benchPadded keeps a counter on its own cache line.
type benchPadded struct {
	v atomic.Uint64
	_ cpu.CacheLinePad
}

// benchBaseline is a system-call baseline that this OS has:
// bench_linux_test.go registers the eventfd ones.
type benchBaseline struct {
	name string
	run  func(b *testing.B)
}

var (
	benchNotifyBaselines  []benchBaseline // BenchmarkNotifyThroughput
	benchLatencyBaselines []benchBaseline // BenchmarkWakeLatency
)

// benchUnipollName names the unipoll variant of a comparison: "unipoll" on
// the default (best) backend, "unipoll-<backend>" on the others.
func benchUnipollName(backend string) string {
	if backend == sys.Backends()[0] {
		return "unipoll"
	}
	return "unipoll-" + backend
}

// ---------------------------------------------------------------------------
// 1. Steady-state Poll with ready events

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
			b.ReportAllocs()
			b.ResetTimer()
			cpu := testsupport.BenchCPU(b)
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

// ---------------------------------------------------------------------------
// 2. One ready descriptor among N

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
	b.ReportAllocs()
	b.ResetTimer()
	cpu := testsupport.BenchCPU(b)
	for range b.N {
		got, err := p.Poll(ev, 0)
		if err != nil || got != 1 || ev.At(0).Token != want {
			b.Fatalf("Poll = %d, %v; want 1 event for token %d", got, err, want)
		}
	}
	cpu()
}

// ---------------------------------------------------------------------------
// 4. SetReadiness costs

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
		b.ReportAllocs()
		b.ResetTimer()
		cpu := testsupport.BenchCPU(b)
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
				b.ReportAllocs()
				b.ResetTimer()
				cpu := testsupport.BenchCPU(b)
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

// ---------------------------------------------------------------------------
// 5. Notification throughput, one producer to one polling consumer

// Protocol of BenchmarkNotifyThroughput, the same for the three variants.
//
// One op is one notification: the producer (the benchmark goroutine) makes
// b.N of them as fast as it may; a consumer goroutine receives them; the
// clock stops when the consumer has accounted for all b.N. Flow control is
// a window of benchNotifyWindow notifications: the producer may be at most
// that many ahead of what the consumer has accounted for.
//
//   - unipoll: 64 edge-triggered Registrations, used round robin. One
//     notification is pending[k].Add(1) (the "message", as a channel
//     package would queue it) followed by SetReadiness(Readable) on
//     Registration k. The consumer Polls (blocking) and, for every event
//     with token k, takes pending[k] (Swap(0)); the sum is what it has
//     accounted for, published in an atomic counter that the producer reads
//     as its credit. SetReadiness on a Registration that is still queued
//     costs almost nothing, and the consumer then gets one event for many
//     notifications: that coalescing is the design. events/op (events the
//     consumer received per notification) and sets/op (SetReadiness calls
//     per notification, always 1) show how much it contributed; wakes/op is
//     the waker writes (system calls) per notification.
//   - chan: a Go channel of Tokens with a buffer of benchNotifyWindow (the
//     channel's own blocking is the flow control); the consumer receives
//     each one. events/op is 1 by construction.
//   - eventfd: the system-call alternative of the RFC, one eventfd write(2)
//     per notification; the consumer blocks in epoll_wait(2) on the
//     (level-triggered) eventfd and read(2)s the counter, which tells it how
//     many notifications it got; credit as for unipoll. The kernel's
//     counter coalesces too: events/op is epoll_wait returns per
//     notification.
//
// Every notification must reach the consumer, so a benchmark that hangs
// here (producer parked for credit, consumer blocked in Poll) has found a
// lost wake-up.
const (
	benchNotifyWindow = 1024
	benchNotifyRegs   = 64
)

func BenchmarkNotifyThroughput(b *testing.B) {
	for _, backend := range sys.Backends() {
		b.Run(benchUnipollName(backend), func(b *testing.B) { benchNotifyUnipoll(b, backend) })
	}
	b.Run("chan", benchNotifyChan)
	for _, bl := range benchNotifyBaselines {
		b.Run(bl.name, bl.run)
	}
}

// benchConsumed is what a consumer goroutine reports when it is done.
type benchConsumed struct {
	events, polls uint64
	err           error
}

func benchNotifyUnipoll(b *testing.B, backend string) {
	p := benchPoll(b, backend)
	sets := benchRegistrations(b, p, benchNotifyRegs, Edge)
	var pending [benchNotifyRegs]benchPadded
	credit := newBenchCredit()
	total := uint64(b.N)
	done := make(chan benchConsumed, 1)
	ev := NewEvents(benchNotifyRegs)
	if _, err := p.Poll(ev, 0); err != nil { // warm the Poll's buffers
		b.Fatal(err)
	}
	go func() {
		var got, events, polls uint64
		for got < total {
			n, err := p.Poll(ev, -1)
			if err != nil {
				done <- benchConsumed{err: err}
				return
			}
			polls++
			events += uint64(n)
			for i := range n {
				got += pending[ev.At(i).Token].v.Swap(0)
			}
			credit.publish(got)
		}
		done <- benchConsumed{events: events, polls: polls}
	}()
	w0 := p.Stats().WakerWrites
	var setCalls, allowed uint64
	b.ReportAllocs()
	b.ResetTimer()
	cpu := testsupport.BenchCPU(b)
	for i := range total {
		if i-allowed >= benchNotifyWindow {
			allowed = credit.await(i)
		}
		k := i % benchNotifyRegs
		pending[k].v.Add(1)
		if err := sets[k].SetReadiness(Readable); err != nil {
			b.Fatal(err)
		}
		setCalls++
	}
	res := <-done
	b.StopTimer()
	cpu()
	if res.err != nil {
		b.Fatal(res.err)
	}
	n := float64(b.N)
	b.ReportMetric(float64(setCalls)/n, "sets/op")
	b.ReportMetric(float64(res.events)/n, "events/op")
	b.ReportMetric(float64(res.polls)/n, "polls/op")
	b.ReportMetric(float64(p.Stats().WakerWrites-w0)/n, "wakes/op")
}

// benchCredit is the flow control of the unipoll and eventfd variants: the
// consumer publishes how many notifications it has accounted for; a
// producer that is benchNotifyWindow ahead parks until the consumer catches
// up, as a sender on a full channel does (a spinning producer would hold a
// core that the consumer may need on a loaded machine).
type benchCredit struct {
	consumed benchPadded
	waiting  atomic.Bool   // the producer is parked, or about to park
	wake     chan struct{} // capacity 1
}

func newBenchCredit() *benchCredit { return &benchCredit{wake: make(chan struct{}, 1)} }

// await returns once the consumer has accounted for more than
// i-benchNotifyWindow notifications, with its count. Producer only.
func (c *benchCredit) await(i uint64) uint64 {
	for {
		if n := c.consumed.v.Load(); i-n < benchNotifyWindow {
			return n
		}
		c.waiting.Store(true)
		// Checked again after announcing: the consumer stores its count
		// before it looks at waiting, so one of the two sees the other.
		if n := c.consumed.v.Load(); i-n < benchNotifyWindow {
			c.waiting.Store(false)
			return n
		}
		<-c.wake
	}
}

// publish records the consumer's count and unparks the producer. Consumer
// only.
func (c *benchCredit) publish(n uint64) {
	c.consumed.v.Store(n)
	if c.waiting.Load() && c.waiting.CompareAndSwap(true, false) {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

func benchNotifyChan(b *testing.B) {
	ch := make(chan Token, benchNotifyWindow)
	total := b.N
	done := make(chan benchConsumed, 1)
	go func() {
		var events uint64
		for range total {
			<-ch
			events++
		}
		done <- benchConsumed{events: events}
	}()
	var sends uint64
	b.ReportAllocs()
	b.ResetTimer()
	cpu := testsupport.BenchCPU(b)
	for i := range total {
		ch <- Token(i % benchNotifyRegs)
		sends++
	}
	res := <-done
	b.StopTimer()
	cpu()
	n := float64(b.N)
	b.ReportMetric(float64(sends)/n, "sets/op")
	b.ReportMetric(float64(res.events)/n, "events/op")
}

// ---------------------------------------------------------------------------
// 6. Wake-up coalescing

// BenchmarkWakeCoalescing sends a burst of 1,000 SetReadiness (round robin
// over 1 or 64 edge-triggered Registrations) to a Poll that a consumer
// goroutine is blocked in, and counts the waker writes (Stats().WakerWrites)
// that the burst caused: only the producer that finds the consumer asleep
// writes, so a burst should cost one or two. One op is one burst.
//
// Per op: wait until the consumer has announced that it sleeps (the queue's
// sleep word), read WakerWrites, make the burst, read WakerWrites again,
// then set an end-of-burst Registration and wait for the consumer to
// acknowledge it (it drains everything before going back to sleep).
func BenchmarkWakeCoalescing(b *testing.B) {
	for _, backend := range sys.Backends() {
		for _, regs := range []int{1, 64} {
			b.Run(fmt.Sprintf("%s/regs=%d", backend, regs), func(b *testing.B) {
				benchWakeCoalescing(b, backend, regs)
			})
		}
	}
}

func benchWakeCoalescing(b *testing.B, backend string, regs int) {
	const burst = 1000
	p := benchPoll(b, backend)
	sets := benchRegistrations(b, p, regs+2, Edge)
	endTok, quitTok := Token(regs), Token(regs+1)
	end, quit := sets[endTok], sets[quitTok]
	sets = sets[:regs]
	ack := make(chan struct{}, 1)
	done := make(chan benchConsumed, 1)
	ev := NewEvents(256)
	if _, err := p.Poll(ev, 0); err != nil { // warm the Poll's buffers
		b.Fatal(err)
	}
	go func() {
		var events, polls uint64
		for {
			n, err := p.Poll(ev, -1)
			if err != nil {
				done <- benchConsumed{err: err}
				return
			}
			polls++
			for i := range n {
				switch ev.At(i).Token {
				case endTok:
					ack <- struct{}{}
				case quitTok:
					done <- benchConsumed{events: events, polls: polls}
					return
				default:
					events++
				}
			}
		}
	}()
	asleep := func() bool { return p.queue.sleep.Load() == queueAsleep }
	var writes, maxWrites uint64
	s0 := p.Stats()
	b.ReportAllocs()
	b.ResetTimer()
	cpu := testsupport.BenchCPU(b)
	for range b.N {
		testsupport.WaitFor(b, "the consumer to sleep", asleep)
		w0 := p.Stats().WakerWrites
		for j := range burst {
			if err := sets[j%regs].SetReadiness(Readable); err != nil {
				b.Fatal(err)
			}
		}
		w := p.Stats().WakerWrites - w0
		writes += w
		maxWrites = max(maxWrites, w)
		if err := end.SetReadiness(Readable); err != nil {
			b.Fatal(err)
		}
		<-ack
	}
	b.StopTimer()
	cpu()
	s1 := p.Stats()
	if err := quit.SetReadiness(Readable); err != nil {
		b.Fatal(err)
	}
	res := <-done
	if res.err != nil {
		b.Fatal(res.err)
	}
	n := float64(b.N)
	b.ReportMetric(float64(writes)/n, "writes/burst")
	b.ReportMetric(float64(maxWrites), "max-writes/burst")
	b.ReportMetric(float64(res.events)/n, "events/burst")
	b.ReportMetric(float64(s1.Polls-s0.Polls)/n, "polls/burst")
}

// ---------------------------------------------------------------------------
// 7. Wake-up latency

// BenchmarkWakeLatency measures how long a goroutine blocked in a wait takes
// to return after another goroutine signals it:
//
//   - unipoll: SetReadiness on an edge-triggered Registration wakes a
//     goroutine blocked in Poll(ev, -1);
//   - eventfd: a write(2) to an (edge-triggered) eventfd wakes a goroutine
//     blocked in epoll_wait(2) on it.
//
// The measurement is testsupport.Latency's: the benchmark goroutine waits
// until the waiter is blocked again (for unipoll until the queue's sleep
// word says so), lets it settle, and then signals; the latency is from the
// signal to the waiter's own timestamp. median-ns and p90-ns are the
// result; ns/op is the whole cycle including the settle time and means
// little.
func BenchmarkWakeLatency(b *testing.B) {
	for _, backend := range sys.Backends() {
		b.Run(benchUnipollName(backend), func(b *testing.B) {
			p := benchPoll(b, backend)
			sets := benchRegistrations(b, p, 1, Edge)
			ev := NewEvents(4)
			if _, err := p.Poll(ev, 0); err != nil { // warm the Poll's buffers
				b.Fatal(err)
			}
			testsupport.Latency(b, testsupport.Waiter{
				Wait: func() error {
					for {
						n, err := p.Poll(ev, -1)
						if err != nil || n > 0 {
							return err
						}
					}
				},
				Asleep: func() bool { return p.queue.sleep.Load() == queueAsleep },
				Wake:   func() error { return sets[0].SetReadiness(Readable) },
			})
		})
	}
	for _, bl := range benchLatencyBaselines {
		b.Run(bl.name, bl.run)
	}
}
