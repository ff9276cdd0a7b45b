//go:build linux

package main

// Scenario 2, wake latency: how long a goroutine blocked in a wait takes to
// return after another goroutine signals it.
//
//   - unipoll: SetReadiness on an edge-triggered Registration wakes a
//     goroutine blocked in Poll(ev, -1);
//   - chan: a send wakes a goroutine blocked receiving (Go channel
//     ping-pong);
//   - eventfd: a write(2) to an edge-triggered eventfd wakes a goroutine
//     blocked in epoll_wait(2) on it;
//   - go-netpoll: a one-byte write to a pipe wakes a goroutine blocked in
//     (*os.File).Read, which the Go runtime parks on its own netpoller.
//
// The measurement is internal/testsupport's Latency, which the wake-up
// benchmarks of the main module use too: per sample the waiter returns,
// takes time.Now(), hands it over and waits again; the signalling goroutine
// busy-waits LatencySettle (so the waiter is blocked again, and the runtime
// has done what it does with a thread in a long system call), then takes
// time.Now() and signals. The latency is the difference. Median and 99th
// percentile are the results; ns/op includes the settle time and means
// nothing.

import (
	"os"
	"testing"

	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/poll"
)

func init() {
	register(Scenario{Num: 2, Name: "wake", Title: "2. Wake latency, signal → blocked waiter returns", Run: runWake})
	microCase("wake/unipoll", wakeUnipoll)
	microCase("wake/chan", wakeChan)
	microCase("wake/eventfd", wakeEventfd)
	microCase("wake/go-netpoll", wakeNetpoll)
}

func runWake(r *Runner) (*Section, error) {
	res, _, err := r.alternate(r.passes(5), r.dur(microFull, microQuick), []contender{
		{label: "unipoll", cse: "wake/unipoll"},
		{label: "chan", cse: "wake/chan"},
		{label: "eventfd", cse: "wake/eventfd"},
		{label: "go-netpoll", cse: "wake/go-netpoll"},
	})
	if err != nil {
		return nil, err
	}
	row := func(what, m string) Row {
		return Row{What: what, Unit: "ns",
			Unipoll: metric(res["unipoll"], m),
			Baselines: append([]Named{
				{"chan", metric(res["chan"], m)},
				{"eventfd", metric(res["eventfd"], m)},
				{"go-netpoll", metric(res["go-netpoll"], m)},
			}, r.variantSamples(func(l string) Sample { return metric(res[l], m) })...),
			RatioTo: "eventfd",
		}
	}
	return &Section{Title: "2. Wake latency", Rows: []Row{
		row("wake latency, median", "median-ns"),
		row("wake latency, p99", "p99-ns"),
	}}, nil
}

func wakeUnipoll(b *testing.B, _ int) {
	p, err := poll.New()
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	reg, set := poll.NewRegistration()
	defer reg.Close()
	if err := p.Register(reg, 1, poll.Readable, poll.Edge); err != nil {
		b.Fatal(err)
	}
	ev := poll.NewEvents(4)
	testsupport.Latency(b, testsupport.Waiter{
		Wait: func() error {
			for {
				n, err := p.Poll(ev, -1)
				if err != nil || n > 0 {
					return err
				}
			}
		},
		Wake: func() error { return set.SetReadiness(poll.Readable) },
	})
}

func wakeChan(b *testing.B, _ int) {
	ch := make(chan struct{}, 1)
	testsupport.Latency(b, testsupport.Waiter{
		Wait: func() error { <-ch; return nil },
		Wake: func() error { ch <- struct{}{}; return nil },
	})
}

func wakeEventfd(b *testing.B, _ int) {
	r := testsupport.NewRawEventfd(b, true)
	testsupport.Latency(b, testsupport.Waiter{Wait: r.Wait, Wake: func() error { return r.Add(1) }})
}

func wakeNetpoll(b *testing.B, _ int) {
	// os.Pipe's descriptors are non-blocking and registered with the
	// runtime's netpoller: Read parks the goroutine, not the thread.
	pr, pw, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	var buf [64]byte
	one := []byte{1}
	testsupport.Latency(b, testsupport.Waiter{
		Wait: func() error { _, err := pr.Read(buf[:]); return err },
		Wake: func() error { _, err := pw.Write(one); return err },
	})
}
