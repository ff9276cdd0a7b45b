//go:build linux

package main

// Scenario 9, dial rate: outbound TCP connects per second to a local
// listener that accepts and closes, with
//
//   - unipoll: netloop.Dial from one eventloop.Loop (one goroutine), a
//     window of dials in flight: each done closes its Conn and starts the
//     next dial;
//   - net.Dialer: DialContext in as many goroutines as the window, each
//     closing its conn and dialing again.
//
// One op is one connect that completed and was closed by the client. The
// listener (a Go net.Listener: one goroutine accepting and closing) is in
// the same process for both, so CPU per connect includes its share, the
// same for both. The window is 64 connects in flight.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/netloop"
)

const dialWindow = 64

func init() {
	register(Scenario{Num: 9, Name: "dial", Title: "9. Dial rate: connects per second from one Loop vs net.Dialer in goroutines", Run: runDial})
	microCase("dial/unipoll", dialUnipoll)
	microCase("dial/net", dialNet)
}

func runDial(r *Runner) (*Section, error) {
	sec := &Section{Title: "9. Dial rate"}
	res, _, err := r.alternate(r.passes(5), r.dur(microFull, microQuick), []contender{
		{label: "unipoll", cse: "dial/unipoll", n: dialWindow},
		{label: "net.Dialer", cse: "dial/net", n: dialWindow},
	})
	if err != nil {
		return nil, err
	}
	rate := func(l string) Sample {
		var s Sample
		for _, v := range metric(res[l], "ns/op").Runs {
			s.add(1e9 / v) // connects per second
		}
		return s
	}
	cpu := func(l string) Sample { return metric(res[l], "cpu-ns/op") }
	sec.Rows = append(sec.Rows,
		Row{
			What: "dial rate, 64 in flight", Unit: "connects/s", Higher: true,
			Unipoll:   rate("unipoll"),
			Baselines: append([]Named{{"net.Dialer", rate("net.Dialer")}}, r.variantSamples(rate)...),
			RatioTo:   "net.Dialer",
		},
		Row{
			What: "dial CPU per connect", Unit: "ns",
			Unipoll:   cpu("unipoll"),
			Baselines: append([]Named{{"net.Dialer", cpu("net.Dialer")}}, r.variantSamples(cpu)...),
			RatioTo:   "net.Dialer",
		})
	sec.Notes = append(sec.Notes, fmt.Sprintf("one op: a connect to a loopback listener that accepts and closes, then the client's close; %d in flight; CPU of the whole process (the listener's goroutine included, the same for both); allocations per connect: unipoll %s, net.Dialer %s",
		dialWindow, formatValue(metric(res["unipoll"], "allocs/op").Median(), ""), formatValue(metric(res["net.Dialer"], "allocs/op").Median(), "")))
	return sec, nil
}

// dialListener listens on loopback and accepts and closes every
// connection in a goroutine until stop.
func dialListener(b *testing.B) (addr string, stop func()) {
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
	return ln.Addr().String(), func() { _ = ln.Close(); wg.Wait() }
}

// dialHandler discards what a dialed Conn receives.
var dialHandler = netloop.HandlerFunc(func(_ *netloop.Conn, in []byte) int { return len(in) })

func dialUnipoll(b *testing.B, window int) {
	addr, stop := dialListener(b)
	defer stop()
	l, err := eventloop.New(eventloop.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- l.Run(ctx, nil) }()

	finished := make(chan error, 1)
	finish := func(err error) {
		select {
		case finished <- err:
		default: // the first end is the one reported
		}
	}
	started, ended := 0, 0 // on the Loop only
	var dial func(l *eventloop.Loop)
	dial = func(l *eventloop.Loop) {
		started++
		err := netloop.Dial(ctx, l, "tcp", addr, dialHandler, netloop.Config{}, func(c *netloop.Conn, err error) {
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
	report := startDialBench(b)
	if err := l.Post(func(l *eventloop.Loop) {
		for range min(window, b.N) {
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
	cancel()
	if err := <-ran; err != nil && !errors.Is(err, context.Canceled) {
		b.Fatal(err)
	}
}

func dialNet(b *testing.B, window int) {
	addr, stop := dialListener(b)
	defer stop()
	var d net.Dialer
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, window)
	report := startDialBench(b)
	for range window {
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

// startDialBench starts the measured part: it reports CPU per op
// (cpu-ns/op) and allocations per connect (allocs/op) when what it
// returns is called.
func startDialBench(b *testing.B) (report func()) {
	var m0 runtime.MemStats
	runtime.ReadMemStats(&m0)
	b.ResetTimer()
	cpu := testsupport.BenchCPU(b)
	return func() {
		cpu()
		var m1 runtime.MemStats
		runtime.ReadMemStats(&m1)
		b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(b.N), "allocs/op")
	}
}
