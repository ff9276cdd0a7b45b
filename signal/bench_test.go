//go:build unix

package signal

import (
	"os"
	ossignal "os/signal"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/unipoll/unipoll/poll"
)

// BenchmarkSignalLatency: from kill(getpid(), SIGUSR1) to the moment the
// waiter learns of it: a Poll call returning the Watcher's event (watcher),
// or a receive from the program's own signal.Notify channel (notify), in
// turn in one run. The Watcher's path has one more hop than a plain Notify
// (the relay's goroutine, then the Poll's wake-up).
//
//	go test ./signal -run '^$' -bench Latency -benchtime 2000x -count 5
func BenchmarkSignalLatency(b *testing.B) {
	b.ReportAllocs()
	p, err := poll.New()
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	w, err := New(syscall.SIGUSR1)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	if err := p.Register(w, 1, poll.Readable, poll.Edge); err != nil {
		b.Fatal(err)
	}
	ch := make(chan os.Signal, 1)
	ossignal.Notify(ch, syscall.SIGUSR2)
	defer ossignal.Stop(ch)
	ev := poll.NewEvents(1)
	pid := syscall.Getpid()
	var lat [2][]time.Duration
	for range b.N {
		t0 := time.Now()
		_ = syscall.Kill(pid, syscall.SIGUSR1)
		if n, err := p.Poll(ev, 5*time.Second); err != nil || n != 1 {
			b.Fatalf("Poll = %d, %v", n, err)
		}
		lat[0] = append(lat[0], time.Since(t0))
		if _, ok := w.TryRecv(); !ok {
			b.Fatal("no signal after the event")
		}

		t0 = time.Now()
		_ = syscall.Kill(pid, syscall.SIGUSR2)
		<-ch
		lat[1] = append(lat[1], time.Since(t0))
	}
	for k, name := range []string{"watcher", "notify"} {
		l := lat[k]
		slices.Sort(l)
		b.ReportMetric(float64(l[len(l)/2].Nanoseconds())/1e3, name+"-p50-µs")
		b.ReportMetric(float64(l[len(l)*99/100].Nanoseconds())/1e3, name+"-p99-µs")
	}
}
