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

// benchNotifyEventfd is BenchmarkNotifyThroughput's baseline.
func benchNotifyEventfd(b *testing.B) { testsupport.NotifyEventfd(b, benchNotifyWindow) }

// benchLatencyEventfd is BenchmarkWakeLatency's baseline: a write(2) to an
// edge-triggered eventfd wakes a goroutine blocked in epoll_wait(2).
func benchLatencyEventfd(b *testing.B) {
	r := testsupport.NewRawEventfd(b, true)
	testsupport.Latency(b, testsupport.Waiter{
		Wait: r.Wait,
		Wake: func() error { return r.Add(1) },
	})
}
