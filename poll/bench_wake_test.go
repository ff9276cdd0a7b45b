package poll

// Benchmarks of waking a Poll: how many waker writes a burst costs, and how
// long a blocked goroutine takes to return (helpers in bench_test.go; the
// eventfd baseline in bench_linux_test.go).

import (
	"fmt"
	"testing"

	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/sys"
)

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
	cpu := testsupport.StartBench(b)
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
