package channel

import (
	"fmt"
	"sync"
	"testing"

	"github.com/unipoll/unipoll/poll"
)

// BenchmarkThroughput moves b.N ints from producers to one consumer
// goroutine, side by side:
//
//   - unbounded, bounded: a channel of this package; the consumer blocks in
//     Poll (edge-triggered) and receives until ErrEmpty after each event.
//     bounded has capacity benchChanCap, like the Go channel.
//   - gochan: a buffered Go channel of capacity benchChanCap drained by a
//     receiving goroutine (for v := range ch).
//
// with 1 and 4 producers, each with its own Sender (a Clone). ns/op is per
// message; allocs/op is per message too, so 1/64 = 0.016 is the bound.
const benchChanCap = 1024

func BenchmarkThroughput(b *testing.B) {
	for _, producers := range []int{1, 4} {
		b.Run(fmt.Sprintf("p=%d/unbounded", producers), func(b *testing.B) { benchChannel(b, producers, 0) })
		b.Run(fmt.Sprintf("p=%d/bounded", producers), func(b *testing.B) { benchChannel(b, producers, benchChanCap) })
		b.Run(fmt.Sprintf("p=%d/gochan", producers), func(b *testing.B) { benchGoChan(b, producers) })
	}
}

// benchShares splits n messages among producers.
func benchShares(n, producers int) []int {
	s := make([]int, producers)
	for i := range s {
		s[i] = n / producers
		if i < n%producers {
			s[i]++
		}
	}
	return s
}

func benchChannel(b *testing.B, producers, capacity int) {
	p, err := poll.New()
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	var tx *Sender[int]
	var rx *Receiver[int]
	if capacity > 0 {
		tx, rx, err = NewBounded[int](capacity)
		if err != nil {
			b.Fatal(err)
		}
	} else {
		tx, rx = New[int]()
	}
	defer rx.Close()
	if err := p.Register(rx, 1, poll.Readable, poll.Edge); err != nil {
		b.Fatal(err)
	}
	senders := make([]*Sender[int], producers)
	for i := range senders {
		if senders[i], err = tx.Clone(); err != nil {
			b.Fatal(err)
		}
	}
	_ = tx.Close()

	total := b.N
	done := make(chan error, 1)
	ev := poll.NewEvents(4)
	var polls, empties int
	go func() {
		got := 0
		for {
			if _, err := p.Poll(ev, -1); err != nil {
				done <- err
				return
			}
			polls++
			for {
				for range rx.Drain() {
					got++
				}
				_, err := rx.TryRecv()
				if err == nil {
					got++
					continue
				}
				if err == ErrDisconnected {
					if got != total {
						err = fmt.Errorf("received %d of %d", got, total)
					} else {
						err = nil
					}
					done <- err
					return
				}
				empties++
				break
			}
		}
	}()
	st0 := p.Stats()
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	for i, n := range benchShares(total, producers) {
		wg.Add(1)
		go func(s *Sender[int], n int) {
			defer wg.Done()
			for j := range n {
				if err := s.Send(j); err != nil {
					b.Error(err)
					return
				}
			}
			_ = s.Close()
		}(senders[i], n)
	}
	wg.Wait()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	st := p.Stats()
	n := float64(b.N)
	b.ReportMetric(float64(polls)/n, "polls/op")
	b.ReportMetric(float64(empties)/n, "empty/op")
	b.ReportMetric(float64(st.WakerWrites-st0.WakerWrites)/n, "wakes/op")
}

func benchGoChan(b *testing.B, producers int) {
	ch := make(chan int, benchChanCap)
	total := b.N
	done := make(chan int, 1)
	go func() {
		got := 0
		for range ch {
			got++
		}
		done <- got
	}()
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	for _, n := range benchShares(total, producers) {
		wg.Add(1)
		go func(n int) {
			defer wg.Done()
			for j := range n {
				ch <- j
			}
		}(n)
	}
	wg.Wait()
	close(ch)
	if got := <-done; got != total {
		b.Fatalf("received %d of %d", got, total)
	}
}
