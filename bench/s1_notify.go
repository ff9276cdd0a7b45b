//go:build linux

package main

// Scenario 1, notification throughput: one producer goroutine tells one
// consumer goroutine that something happened, as fast as it may, through
//
//   - unipoll: pending[k].Add(1) (the message, as a channel would queue it)
//     and SetReadiness(Readable) on edge-triggered Registration k of 64,
//     round robin; the consumer blocks in Poll(ev, -1) and takes
//     pending[k] for every event (one event may stand for many
//     notifications: coalescing is the design);
//   - chan: a buffered Go channel of tokens, received one by one;
//   - eventfd: one eventfd write(2) per notification, the consumer blocked
//     in epoll_wait(2) on it and reading the count (the kernel coalesces
//     too).
//
// Flow control is a window of notifyWindow: the producer may be at most
// that far ahead of what the consumer has accounted for (the Go channel's
// buffer is the same size), and parks when it is, as a sender on a full
// channel does. One op is one notification; the rate is the result.

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/poll"
)

const (
	notifyWindow = 1024
	notifyRegs   = 64
)

func init() {
	register(Scenario{Num: 1, Name: "notify", Title: "1. Notification throughput, 1 producer → 1 polling consumer", Run: runNotify})
	microCase("notify/unipoll", notifyUnipoll)
	microCase("notify/chan", notifyChan)
	microCase("notify/eventfd", notifyEventfd)
}

// notifyPass is the length of one pass of a full run: short, so that the
// fifteen passes sample many minutes of the machine (see runChannel).
const notifyPass = 400 * time.Millisecond

func runNotify(r *Runner) (*Section, error) {
	// Paired, fifteen passes: a notification moves a few cache lines
	// between the two CPUs, whose cost on this VM doubles in its slow
	// phases, so the figure is the pass-by-pass ratio, and its target
	// holds for the lower quartile too (issue 27).
	res, _, err := r.alternate(r.passes(15), r.dur(notifyPass, microQuick), []contender{
		{label: "unipoll", cse: "notify/unipoll"},
		{label: "chan", cse: "notify/chan"},
		{label: "eventfd", cse: "notify/eventfd"},
	})
	if err != nil {
		return nil, err
	}
	row := Row{
		What: "notification throughput", Unit: "M/s", Higher: true,
		Unipoll: perSecond(metric(res["unipoll"], "ns/op")),
		Baselines: []Named{
			{"chan", perSecond(metric(res["chan"], "ns/op"))},
			{"eventfd", perSecond(metric(res["eventfd"], "ns/op"))},
		},
		RatioTo: "chan", Paired: true, Target: Target{Min: 2, LowMin: 2},
	}
	row.Baselines = append(row.Baselines, r.variantSamples(func(l string) Sample { return perSecond(metric(res[l], "ns/op")) })...)
	row2 := row
	row2.What = "notification throughput vs eventfd"
	row2.RatioTo, row2.Paired, row2.Target = "eventfd", false, Target{Min: 10}
	sec := &Section{Title: "1. Notification throughput", Rows: []Row{row, row2}}
	u := res["unipoll"]
	sec.Notes = append(sec.Notes,
		"unipoll: "+sig3(metric(u, "events/op").Median())+" events and "+sig3(metric(u, "wakes/op").Median())+
			" waker writes per notification (coalescing); CPU "+formatValue(metric(u, "cpu-ns/op").Median(), "ns")+
			" per notification, chan "+formatValue(metric(res["chan"], "cpu-ns/op").Median(), "ns")+
			", eventfd "+formatValue(metric(res["eventfd"], "cpu-ns/op").Median(), "ns"))
	return sec, nil
}

type padded struct {
	v atomic.Uint64
	_ [56]byte
}

func notifyUnipoll(b *testing.B, _ int) {
	p, err := poll.New()
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	sets := make([]*poll.SetReadiness, notifyRegs)
	for i := range sets {
		reg, set := poll.NewRegistration()
		defer reg.Close()
		if err := p.Register(reg, poll.Token(i), poll.Readable, poll.Edge); err != nil {
			b.Fatal(err)
		}
		sets[i] = set
	}
	var pending [notifyRegs]padded
	cr := testsupport.NewCredit(notifyWindow)
	total := uint64(b.N)
	type result struct {
		events uint64
		err    error
	}
	done := make(chan result, 1)
	ev := poll.NewEvents(notifyRegs)
	go func() {
		var got, events uint64
		for got < total {
			n, err := p.Poll(ev, -1)
			if err != nil {
				done <- result{err: err}
				return
			}
			events += uint64(n)
			for e := range ev.All() {
				got += pending[e.Token].v.Swap(0)
			}
			cr.Publish(got)
		}
		done <- result{events: events}
	}()
	w0 := p.Stats().WakerWrites
	cpu := testsupport.StartBench(b)
	for i := range total {
		cr.Take(i)
		k := i % notifyRegs
		pending[k].v.Add(1)
		if err := sets[k].SetReadiness(poll.Readable); err != nil {
			b.Fatal(err)
		}
	}
	res := <-done
	b.StopTimer()
	cpu()
	if res.err != nil {
		b.Fatal(res.err)
	}
	b.ReportMetric(float64(res.events)/float64(b.N), "events/op")
	b.ReportMetric(float64(p.Stats().WakerWrites-w0)/float64(b.N), "wakes/op")
}

func notifyChan(b *testing.B, _ int) {
	ch := make(chan poll.Token, notifyWindow)
	done := make(chan struct{})
	total := b.N
	go func() {
		for range total {
			<-ch
		}
		close(done)
	}()
	cpu := testsupport.StartBench(b)
	for i := range total {
		ch <- poll.Token(i % notifyRegs)
	}
	<-done
	b.StopTimer()
	cpu()
	b.ReportMetric(1, "events/op")
}

func notifyEventfd(b *testing.B, _ int) { testsupport.NotifyEventfd(b, notifyWindow) }
