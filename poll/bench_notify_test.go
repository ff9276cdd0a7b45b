package poll

// Benchmark of notification throughput, one producer to one polling
// consumer (helpers in bench_test.go; the eventfd baseline in
// bench_linux_test.go).

import (
	"testing"

	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/sys"
)

// Protocol of BenchmarkNotifyThroughput, the same for the three variants.
//
// One op is one notification: the producer (the benchmark goroutine) makes
// b.N of them as fast as it may; a consumer goroutine receives them; the
// clock stops when the consumer has accounted for all b.N. Flow control is
// a window of benchNotifyWindow notifications (testsupport.Credit): the
// producer may be at most that many ahead of what the consumer has
// accounted for, and parks when it is.
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
//   - eventfd: the system-call alternative, testsupport.NotifyEventfd: one
//     eventfd write(2) per notification; the consumer blocks in
//     epoll_wait(2) on the (level-triggered) eventfd and read(2)s the
//     counter, which tells it how many notifications it got; credit as for
//     unipoll. The kernel's counter coalesces too: events/op is epoll_wait
//     returns per notification.
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
	credit := testsupport.NewCredit(benchNotifyWindow)
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
			credit.Publish(got)
		}
		done <- benchConsumed{events: events, polls: polls}
	}()
	w0 := p.Stats().WakerWrites
	var setCalls uint64
	cpu := testsupport.StartBench(b)
	for i := range total {
		credit.Take(i)
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
	cpu := testsupport.StartBench(b)
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
