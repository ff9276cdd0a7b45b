package poll

import (
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A descriptor event that comes just after a Registration event: the
// consumer's next Poll spins for Registrations (SpinWait), and the byte
// written to its socket meanwhile must be reported by the spin's own looks
// at the kernel, not after the spin. Per op: SetReadiness, the consumer
// reports it, one byte on a socketpair, the consumer reports that. The
// metric is the byte's latency, from before the write to the consumer's
// event (median over the run); nospin is the same with SpinWait off, so
// the consumer is asleep in the kernel when the byte comes.
func BenchmarkDescriptorAfterRegistration(b *testing.B) {
	for _, c := range []struct {
		name string
		spin time.Duration
	}{{"spin", 0}, {"nospin", -1}} {
		b.Run(c.name, func(b *testing.B) {
			p := newPollConfig(b, Config{SpinWait: c.spin})
			_, set := newRegistered(b, p, 1, Readable, Edge)
			a, w := socketPair(b)
			if err := p.Register(Fd(a), 2, Readable, Edge); err != nil {
				b.Fatal(err)
			}
			var regSeen, sockSeen atomic.Int64 // rounds seen by the consumer
			var sockAt atomic.Int64            // when the consumer saw the byte, since start
			start := time.Now()
			done := make(chan error, 1)
			go func() {
				ev := NewEvents(4)
				buf := make([]byte, 64)
				for {
					if _, err := p.Poll(ev, -1); err != nil {
						done <- nil
						return
					}
					for e := range ev.All() {
						switch e.Token {
						case 1:
							regSeen.Add(1)
						case 2:
							sockAt.Store(int64(time.Since(start)))
							for {
								if _, err := unix.Read(a, buf); err != nil {
									break
								}
							}
							sockSeen.Add(1)
						}
					}
				}
			}()
			wait := func(v *atomic.Int64, want int64) {
				for v.Load() < want {
					runtime.Gosched()
				}
			}
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range int64(b.N) {
				if err := set.SetReadiness(Readable); err != nil {
					b.Fatal(err)
				}
				wait(&regSeen, i+1)
				t0 := time.Since(start)
				if _, err := unix.Write(w, []byte{1}); err != nil {
					b.Fatal(err)
				}
				wait(&sockSeen, i+1)
				lat = append(lat, time.Duration(sockAt.Load())-t0)
			}
			b.StopTimer()
			_ = p.Close()
			<-done
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "byte-p50-ns")
		})
	}
}
