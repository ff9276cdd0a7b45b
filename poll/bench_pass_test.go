package poll

import (
	"testing"
	"time"
)

// BenchmarkPollPassWheelPending is a busy Poll's pass with the wheel
// holding a deadline (a delay an hour away, as a server's sweep timer
// keeps): one level-triggered Registration that is always ready, so every
// Poll(ev, 0) returns it, and no descriptor. The pass reads the wheel's
// clock once (TestPollReadsTheClockOncePerPass); the figure to compare is
// against the same pass with the wheel empty.
func BenchmarkPollPassWheelPending(b *testing.B) {
	for _, pending := range []bool{false, true} {
		name := "wheel=empty"
		if pending {
			name = "wheel=pending"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			p := benchPoll(b, "")
			sets := benchRegistrations(b, p, 2, Level)
			if err := sets[0].SetReadiness(Readable); err != nil {
				b.Fatal(err)
			}
			if pending {
				if err := sets[1].DelayReadiness(Readable, time.Hour); err != nil {
					b.Fatal(err)
				}
			}
			ev := NewEvents(8)
			b.ResetTimer()
			for range b.N {
				if n, err := p.Poll(ev, 0); err != nil || n != 1 {
					b.Fatalf("Poll = %d, %v; want 1 event", n, err)
				}
			}
		})
	}
}
