package poll

import (
	"testing"
	"time"
)

// DelayReadiness then UnsetReadiness, which cancels it: scheduling and
// cancelling one deadline in the Poll's wheel, from the producer's side.
func BenchmarkDelayReadiness(b *testing.B) {
	b.ReportAllocs()
	p, err := New()
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	r, s := NewRegistration()
	defer r.Close()
	if err := p.Register(r, 1, Readable, Edge); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if err := s.DelayReadiness(Readable, time.Hour); err != nil {
			b.Fatal(err)
		}
		if err := s.UnsetReadiness(Readable); err != nil {
			b.Fatal(err)
		}
	}
}
