package channel

import (
	"fmt"
	"sync"
	"testing"

	"github.com/unipoll/unipoll/internal/onpoll/polltest"
	"github.com/unipoll/unipoll/poll"
)

// BenchmarkThroughput moves b.N ints from producers to one consumer
// goroutine, side by side:
//
//   - channel: a bounded channel of this package, capacity benchChanCap,
//     producers blocking in Send when it is full; the consumer blocks in
//     Poll (edge-triggered) and after each event receives with Drain until
//     ErrEmpty.
//   - channel-unpaced: the same with pacing off (see segQueue), to show
//     what it buys.
//   - gochan: a buffered Go channel of the same capacity drained by a
//     receiving goroutine (for v := range ch).
//
// with 1 and 4 producers, each with its own Sender (a Clone). ns/op and
// allocs/op are per message, so an allocation per 64 messages would show
// as 0.016. polls/op, empty/op and wakes/op tell how often the consumer
// polled, found the channel empty, and was woken by a waker write.
//
// Both sides of the comparison are sensitive to where the Go scheduler
// puts the goroutines (a woken goroutine is queued on the waker's P), so
// single runs vary by 2x on a 2-core machine: compare medians of many
// runs (-count), side by side.
const benchChanCap = 1024

func BenchmarkThroughput(b *testing.B) {
	for _, producers := range []int{1, 4} {
		b.Run(fmt.Sprintf("p=%d/channel", producers), func(b *testing.B) { benchChannel(b, producers, benchChanCap) })
		b.Run(fmt.Sprintf("p=%d/channel-unpaced", producers), func(b *testing.B) {
			defer func(n int) { paceSpin = n }(paceSpin)
			paceSpin = 0
			benchChannel(b, producers, benchChanCap)
		})
		b.Run(fmt.Sprintf("p=%d/gochan", producers), func(b *testing.B) { benchGoChan(b, producers) })
	}
}

// BenchmarkSendRecv is the cost of the operations themselves, without a
// second goroutine: one goroutine sends 64 values and receives them, per
// 64 ops. channel receives with Drain, channel-tryrecv with TryRecv.
func BenchmarkSendRecv(b *testing.B) {
	b.Run("channel", func(b *testing.B) { benchSendRecv(b, true) })
	b.Run("channel-tryrecv", func(b *testing.B) { benchSendRecv(b, false) })
	b.Run("gochan", func(b *testing.B) {
		ch := make(chan int, 64)
		b.ReportAllocs()
		for i := 0; i < b.N; i += 64 {
			for j := range 64 {
				ch <- j
			}
			for range 64 {
				<-ch
			}
		}
	})
}

func benchSendRecv(b *testing.B, drain bool) {
	tx, rx := New[int]()
	defer rx.Close()
	b.ReportAllocs()
	for i := 0; i < b.N; i += 64 {
		for j := range 64 {
			if err := tx.Send(j); err != nil {
				b.Fatal(err)
			}
		}
		if drain {
			for range rx.Drain() {
			}
			continue
		}
		for range 64 {
			if _, err := rx.TryRecv(); err != nil {
				b.Fatal(err)
			}
		}
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
	tx, rx, err := NewBounded[int](capacity)
	if err != nil {
		b.Fatal(err)
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

// BenchmarkPingPong is the round trip of one value to an echoing goroutine
// and back, each side blocking in its own Poll, one value in flight: the
// case pacing must not slow down (the consumer catches up every time). The
// echo side receives the way that would feel a spin most, draining all it
// has before it answers. channel-unpaced turns pacing off, gochan is the
// same with two unbuffered Go channels.
func BenchmarkPingPong(b *testing.B) {
	b.Run("channel", func(b *testing.B) { benchPingPong(b) })
	b.Run("channel-unpaced", func(b *testing.B) {
		defer func(n int) { paceSpin = n }(paceSpin)
		paceSpin = 0
		benchPingPong(b)
	})
	b.Run("gochan", func(b *testing.B) {
		req, resp := make(chan int), make(chan int)
		go func() {
			for v := range req {
				resp <- v
			}
			close(resp)
		}()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			req <- i
			if v := <-resp; v != i {
				b.Fatalf("got %d, want %d", v, i)
			}
		}
		close(req)
		<-resp
	})
}

func benchPingPong(b *testing.B) {
	reqTx, reqRx := New[int]()
	respTx, respRx := New[int]()
	defer reqRx.Close()
	defer respRx.Close()
	pMain, pEcho := polltest.New(b), polltest.New(b)
	if err := pMain.Register(respRx, 1, poll.Readable, poll.Edge); err != nil {
		b.Fatal(err)
	}
	if err := pEcho.Register(reqRx, 1, poll.Readable, poll.Edge); err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		defer respTx.Close()
		ev := poll.NewEvents(4)
		for {
			if _, err := pEcho.Poll(ev, -1); err != nil {
				done <- err
				return
			}
			last, got := 0, false
			for {
				for v := range reqRx.Drain() {
					last, got = v, true
				}
				v, err := reqRx.TryRecv() // which error stopped Drain
				if err == nil {           // a value sent since
					last, got = v, true
					continue
				}
				if err == ErrDisconnected {
					done <- nil
					return
				}
				break
			}
			if got {
				if err := respTx.Send(last); err != nil {
					done <- err
					return
				}
			}
		}
	}()
	ev := poll.NewEvents(4)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := reqTx.Send(i); err != nil {
			b.Fatal(err)
		}
		for got := false; !got; {
			if _, err := pMain.Poll(ev, -1); err != nil {
				b.Fatal(err)
			}
			for v := range respRx.Drain() {
				if v != i {
					b.Fatalf("got %d, want %d", v, i)
				}
				got = true
			}
		}
	}
	b.StopTimer()
	_ = reqTx.Close()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}
