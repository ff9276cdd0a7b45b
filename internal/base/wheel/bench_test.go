package wheel

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// The cost of time passing per expired deadline, with 1,000 and with
// 1,000,000 deadlines pending, random over 60 s, on a clock the benchmark
// moves (Wheel.Advance): the wheel's own work, without the system calls of
// a Poll. "tick" moves the clock 1 ms at a time, so the sparse case pays
// for the ticks in which nothing expires; "jump" moves it straight to the
// next occupied slot, which leaves the work per expired deadline itself
// (taking it from its slots, cascades included, and handing it out). A
// tick costs what expires, so per expired deadline the two sizes should
// be close.
func BenchmarkWheelExpire(b *testing.B) {
	for _, c := range []struct {
		step string
		n    int
	}{{"tick", 1_000}, {"tick", 1_000_000}, {"jump", 1_000}, {"jump", 1_000_000}} {
		n := c.n
		b.Run(fmt.Sprintf("%s/pending=%d", c.step, n), func(b *testing.B) {
			b.ReportAllocs()
			var total time.Duration
			for range b.N {
				w, id := newTestWheel(b, time.Millisecond, MaxSlots, 0)
				rng := rand.New(rand.NewPCG(1, uint64(n)))
				w.mu.Lock()
				for i := range n {
					dl, now := w.DeadlineAfter(time.Duration(rng.Int64N(int64(60 * time.Second))))
					w.schedule(id, uint64(i), dl, now)
				}
				w.mu.Unlock()
				start := time.Now()
				for w.Pending() > 0 {
					step := time.Millisecond
					if c.step == "jump" {
						w.mu.Lock()
						_, _, at, _ := w.next()
						step = w.untilTick(at, new(Reading))
						w.mu.Unlock()
					}
					w.Advance(step)
					w.Expire()
					for {
						if _, ok := w.take(id); !ok {
							break
						}
					}
				}
				total += time.Since(start)
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N*n), "ns/expired")
		})
	}
}
