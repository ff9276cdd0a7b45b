package timer

import (
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/unipoll/unipoll/poll"
)

// Set then Cancel of one timeout, against time.AfterFunc then Stop: the
// operation a connection deadline does on every request.
func BenchmarkSetCancel(b *testing.B) {
	b.Run("timer", func(b *testing.B) {
		b.ReportAllocs()
		p := newPoll(b)
		tm := newTimer[int](b, p, poll.Edge)
		b.ResetTimer()
		for i := range b.N {
			to, err := tm.Set(time.Hour, i)
			if err != nil {
				b.Fatal(err)
			}
			if _, ok := tm.Cancel(to); !ok {
				b.Fatal("Cancel failed")
			}
		}
	})
	// A value whose first word is a pointer travels beside the wheel's
	// key (values.go).
	b.Run("timer-pointer", func(b *testing.B) {
		b.ReportAllocs()
		p := newPoll(b)
		tm := newTimer[*int](b, p, poll.Edge)
		v := new(int)
		b.ResetTimer()
		for range b.N {
			to, err := tm.Set(time.Hour, v)
			if err != nil {
				b.Fatal(err)
			}
			if _, ok := tm.Cancel(to); !ok {
				b.Fatal("Cancel failed")
			}
		}
	})
	// An interface holds two pointers: it is kept in the Timer's slab.
	b.Run("timer-slab", func(b *testing.B) {
		b.ReportAllocs()
		p := newPoll(b)
		tm := newTimer[any](b, p, poll.Edge)
		var v any = new(int)
		b.ResetTimer()
		for range b.N {
			to, err := tm.Set(time.Hour, v)
			if err != nil {
				b.Fatal(err)
			}
			if _, ok := tm.Cancel(to); !ok {
				b.Fatal("Cancel failed")
			}
		}
	})
	b.Run("time.AfterFunc", func(b *testing.B) {
		b.ReportAllocs()
		f := func() {}
		for range b.N {
			tm := time.AfterFunc(time.Hour, f)
			if !tm.Stop() {
				b.Fatal("Stop failed")
			}
		}
	})
}

// Memory per pending timeout with a million pending (value type int),
// against a million time.Timers: bytes of heap per timer, after a GC.
func BenchmarkMillionPending(b *testing.B) {
	const n = 1_000_000
	b.Run("timer", func(b *testing.B) {
		for range b.N {
			p := newPoll(b)
			tm := newTimer[int](b, p, poll.Edge)
			before := heapAlloc()
			for i := range n {
				if _, err := tm.Set(time.Hour+time.Duration(i)*time.Millisecond, i); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(heapAlloc()-before)/n, "B/timer")
			runtime.KeepAlive(tm)
			_ = tm.Close()
		}
	})
	b.Run("time.Timer", func(b *testing.B) {
		for range b.N {
			before := heapAlloc()
			timers := make([]*time.Timer, n)
			f := func() {}
			for i := range timers {
				timers[i] = time.AfterFunc(time.Hour+time.Duration(i)*time.Millisecond, f)
			}
			b.ReportMetric(float64(heapAlloc()-before)/n, "B/timer")
			for _, t := range timers {
				t.Stop()
			}
			runtime.KeepAlive(timers)
		}
	})
}

func heapAlloc() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// The CPU a Poll loop spends, per second of wall time, with a million
// timeouts pending and none due: it blocks until the earliest slot of the
// wheel comes up, so about nothing.
func BenchmarkIdlePollMillionPending(b *testing.B) {
	p := newPoll(b)
	tm := newTimer[int](b, p, poll.Edge)
	for i := range 1_000_000 {
		if _, err := tm.Set(time.Hour+time.Duration(i)*time.Millisecond, i); err != nil {
			b.Fatal(err)
		}
	}
	ev := poll.NewEvents(16)
	b.ResetTimer()
	for range b.N {
		start, cpu0 := time.Now(), cpuTime()
		for time.Since(start) < time.Second {
			if _, err := p.Poll(ev, 100*time.Millisecond); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Since(start))*1000, "cpu-ms/s")
	}
}

// cpuTime is the process's user and system time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
