package poll

// The Linux system-call baselines of bench_test.go: an eventfd watched by
// epoll, with nothing of unipoll in between (testsupport.RawEventfd).

import (
	"testing"

	"github.com/unipoll/unipoll/internal/testsupport"
)

func init() {
	benchNotifyBaselines = append(benchNotifyBaselines, benchBaseline{"eventfd", benchNotifyEventfd})
	benchLatencyBaselines = append(benchLatencyBaselines, benchBaseline{"eventfd", benchLatencyEventfd})
}

func benchNotifyEventfd(b *testing.B) {
	r := testsupport.NewRawEventfd(b, false)
	credit := newBenchCredit()
	total := uint64(b.N)
	done := make(chan benchConsumed, 1)
	go func() {
		var got, events uint64
		for got < total {
			if err := r.Wait(); err != nil {
				done <- benchConsumed{err: err}
				return
			}
			events++
			v, err := r.Take()
			if err != nil {
				done <- benchConsumed{err: err}
				return
			}
			got += v
			credit.publish(got)
		}
		done <- benchConsumed{events: events}
	}()
	var writes, allowed uint64
	b.ReportAllocs()
	b.ResetTimer()
	cpu := testsupport.BenchCPU(b)
	for i := range total {
		if i-allowed >= benchNotifyWindow {
			allowed = credit.await(i)
		}
		if err := r.Add(1); err != nil {
			b.Fatal(err)
		}
		writes++
	}
	res := <-done
	b.StopTimer()
	cpu()
	if res.err != nil {
		b.Fatal(res.err)
	}
	n := float64(b.N)
	b.ReportMetric(float64(writes)/n, "sets/op")
	b.ReportMetric(float64(res.events)/n, "events/op")
}

// benchLatencyEventfd is BenchmarkWakeLatency's baseline: a write(2) to an
// edge-triggered eventfd wakes a goroutine blocked in epoll_wait(2).
func benchLatencyEventfd(b *testing.B) {
	r := testsupport.NewRawEventfd(b, true)
	testsupport.Latency(b, testsupport.Waiter{
		Wait: r.Wait,
		Wake: func() error { return r.Add(1) },
	})
}
