package channel

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/onpoll/polltest"
	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/poll"
)

// msg identifies a value by its producer and its number in that
// producer's sequence.
type msg struct{ producer, seq int }

// consume receives from rx through p (registered under rxTok with opts)
// until ErrDisconnected, and checks that each producer's values arrive
// once each and in order. A Poll call that waits eventWait with nothing
// reported while values are pending is a lost readiness: it fails.
func consume(t *testing.T, p *poll.Poll, rx *Receiver[msg], opts poll.PollOpt, producers, perProducer int, drain bool) {
	t.Helper()
	next := make([]int, producers)
	ev := poll.NewEvents(4)
	received := 0
	for {
		n, err := p.Poll(ev, eventWait)
		require.NoError(t, err)
		if n == 0 {
			require.FailNow(t, "lost readiness",
				"no event for %v with %d values pending (received %d)", eventWait, rx.Len(), received)
		}
		// Receive until ErrEmpty, as an edge-triggered consumer must.
		for {
			if drain {
				for m := range rx.Drain() {
					require.Equal(t, next[m.producer], m.seq, "producer %d out of order", m.producer)
					next[m.producer]++
					received++
				}
			}
			m, err := rx.TryRecv()
			if errors.Is(err, ErrEmpty) {
				break
			}
			if errors.Is(err, ErrDisconnected) {
				for i, n := range next {
					require.Equal(t, perProducer, n, "values received from producer %d", i)
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, next[m.producer], m.seq, "producer %d out of order", m.producer)
			next[m.producer]++
			received++
		}
		if opts.IsOneshot() {
			require.NoError(t, p.Reregister(rx, rxTok, poll.Readable, opts))
		}
	}
}

// Many concurrent Senders, each a Clone used by its own goroutine: every
// value is received exactly once, in its Sender's order, through a Poll in
// each mode, on unbounded and bounded (blocking Send) channels; the
// Receiver learns of the disconnection after the last value.
func TestManySenders(t *testing.T) {
	const producers, perProducer = 6, 3000
	for _, capacity := range []int{0, 7} {
		for _, opts := range []poll.PollOpt{poll.Edge, poll.Level, poll.Edge | poll.Oneshot, poll.Level | poll.Oneshot} {
			for _, drain := range []bool{false, true} {
				name := fmt.Sprintf("cap=%d/%s/drain=%v", capacity, opts, drain)
				t.Run(name, func(t *testing.T) {
					p := polltest.New(t)
					var tx *Sender[msg]
					var rx *Receiver[msg]
					if capacity > 0 {
						var err error
						tx, rx, err = NewBounded[msg](capacity)
						require.NoError(t, err)
					} else {
						tx, rx = New[msg]()
					}
					var wg sync.WaitGroup
					defer func() { // on failure too: unblock the producers first
						_ = rx.Close()
						wg.Wait()
					}()
					require.NoError(t, p.Register(rx, rxTok, poll.Readable, opts))
					for i := range producers {
						s, err := tx.Clone()
						require.NoError(t, err)
						wg.Add(1)
						go func() {
							defer wg.Done()
							defer s.Close()
							for j := range perProducer {
								if err := s.Send(msg{i, j}); err != nil {
									t.Errorf("producer %d: Send: %v", i, err)
									return
								}
							}
						}()
					}
					require.NoError(t, tx.Close())
					consume(t, p, rx, opts, producers, perProducer, drain)
					wg.Wait()
				})
			}
		}
	}
}

// Producers driven by their own Polls: each registers its bounded Sender
// for Writable (edge) and uses only TrySend, waiting for a Writable event
// after ErrFull. None blocks, none loses a wake-up, and every value
// arrives once and in order.
func TestWritableDrivenProducers(t *testing.T) {
	const producers, perProducer = 4, 2000
	p := polltest.New(t)
	tx, rx, err := NewBounded[msg](5)
	require.NoError(t, err)
	var wg sync.WaitGroup
	defer func() { // on failure too: unblock the producers first
		_ = rx.Close()
		wg.Wait()
	}()
	require.NoError(t, p.Register(rx, rxTok, poll.Readable, poll.Edge))
	for i := range producers {
		s, err := tx.Clone()
		require.NoError(t, err)
		pp := polltest.New(t)
		require.NoError(t, pp.Register(s, txTok, poll.Writable, poll.Edge))
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer s.Close()
			ev := poll.NewEvents(1)
			for j := 0; j < perProducer; {
				err := s.TrySend(msg{i, j})
				if err == nil {
					j++
					continue
				}
				if !errors.Is(err, ErrFull) {
					t.Errorf("producer %d: TrySend: %v", i, err)
					return
				}
				n, err := pp.Poll(ev, eventWait)
				if err != nil || n == 0 {
					t.Errorf("producer %d: no Writable event within %v (err %v) with %d values queued",
						i, eventWait, err, rx.Len())
					return
				}
			}
		}()
	}
	require.NoError(t, tx.Close())
	consume(t, p, rx, poll.Edge, producers, perProducer, true)
	wg.Wait()
}

// sendSlow is Send on an unbounded channel with the Send held in progress
// for a while between reserving its slot and filling it (i%4 yields), so
// that a Pop often finds the head slot reserved but empty while later
// slots are full (the case the queue's promise in channel.go allows and
// rule C must survive).
func sendSlow(s *Sender[int], v int, i int64) error {
	if s.c.rxClosed.Load() {
		return ErrDisconnected
	}
	sl, _, _ := s.c.take(s)
	for range i % 4 {
		runtime.Gosched()
	}
	return s.c.put(sl, v)
}

// A receive racing a send never leaves a value pending with no readiness
// set (mio-extras' race). Two producers send bursts of one to three values
// and then wait until the consumer has received everything sent, so the
// consumer keeps catching up and clearing Readable while Sends are under
// way, and a value stranded there is never rescued by a later Send. The
// dangerous case needs a Send whose slot is taken but not yet filled while
// a later Send completes and sets Readable: the consumer's Pop then finds
// nothing, and the slow Send finishes and sees Readable still set just
// before the consumer clears it. Without the re-check after the clear (rule
// C in channel.go), the consumer's Poll then waits eventWait for nothing
// while the producers wait for it. sendSlow widens that window; a plain
// Send has it too, only narrower.
func TestRecvSendRace(t *testing.T) {
	const total = 6000
	for _, queue := range []string{"send", "slow"} {
		for _, opts := range []poll.PollOpt{poll.Edge, poll.Level} {
			t.Run(queue+"/"+opts.String(), func(t *testing.T) {
				recvSendRace(t, queue, opts, total)
			})
		}
	}
}

func recvSendRace(t *testing.T, queue string, opts poll.PollOpt, total int) {
	p := polltest.New(t)
	tx, rx := New[int]()
	send := func(s *Sender[int], v int, i int64) error { return s.Send(v) }
	if queue == "slow" {
		send = sendSlow
	}
	defer rx.Close()
	require.NoError(t, p.Register(rx, rxTok, poll.Readable, opts))
	var sent, received atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 2 {
		s, err := tx.Clone()
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer s.Close()
			for burst := g; ; burst++ {
				for range 1 + burst%3 {
					i := sent.Add(1)
					if i > int64(total) {
						return
					}
					if err := send(s, int(i), i); err != nil {
						t.Errorf("Send: %v", err)
						return
					}
				}
				for received.Load() < min(sent.Load(), int64(total)) {
					select {
					case <-stop:
						return
					default:
						runtime.Gosched()
					}
				}
			}
		}()
	}
	require.NoError(t, tx.Close())
	defer func() {
		close(stop)
		wg.Wait()
	}()
	ev := poll.NewEvents(1)
	for {
		n, err := p.Poll(ev, eventWait)
		require.NoError(t, err)
		if n == 0 {
			require.FailNow(t, "lost readiness",
				"Poll waited %v with %d values pending (received %d of %d)",
				eventWait, rx.Len(), received.Load(), total)
		}
		for {
			_, err := rx.TryRecv()
			if errors.Is(err, ErrEmpty) {
				break
			}
			if errors.Is(err, ErrDisconnected) {
				require.Equal(t, int64(total), received.Load())
				return
			}
			require.NoError(t, err)
			received.Add(1)
		}
	}
}

// Sends racing the Close of their own Sender (and Clones racing it): every
// Send that returned nil has its value received, exactly once and in order,
// before ErrDisconnected; the others return ErrClosed.
func TestSendRacesClose(t *testing.T) {
	const rounds = 50
	for r := range rounds {
		tx, rx := New[int]()
		var delivered atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i := 0; ; i++ {
					err := tx.Send(g<<32 | i)
					if err != nil {
						if !errors.Is(err, ErrClosed) {
							t.Errorf("Send: %v", err)
						}
						return
					}
					delivered.Add(1)
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for {
				c, err := tx.Clone()
				if err != nil {
					if !errors.Is(err, ErrClosed) {
						t.Errorf("Clone: %v", err)
					}
					return
				}
				_ = c.Close()
			}
		}()
		close(start)
		testsupport.WaitFor(t, "some values delivered", func() bool { return delivered.Load() >= int64(r%50) })
		require.NoError(t, tx.Close())
		wg.Wait()
		next := [2]int{}
		got := 0
		for {
			v, err := rx.TryRecv()
			if errors.Is(err, ErrDisconnected) {
				break
			}
			require.NoError(t, err, "after %d values", got)
			g := v >> 32
			require.Equal(t, next[g], v&(1<<32-1))
			next[g]++
			got++
		}
		require.Equal(t, delivered.Load(), int64(got), "round %d", r)
		require.NoError(t, rx.Close())
	}
}

// Senders that keep sending while the Receiver closes, on a bounded
// channel where some of them are blocked: all return, with nil or
// ErrDisconnected.
func TestSendRacesReceiverClose(t *testing.T) {
	for range 50 {
		tx, rx, err := NewBounded[int](3)
		require.NoError(t, err)
		var wg sync.WaitGroup
		for range 4 {
			s, err := tx.Clone()
			require.NoError(t, err)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer s.Close()
				for {
					if err := s.Send(1); err != nil {
						if !errors.Is(err, ErrDisconnected) {
							t.Errorf("Send: %v", err)
						}
						return
					}
				}
			}()
		}
		testsupport.WaitFor(t, "a blocked Send", rx.c.sleepingNow)
		_, _ = rx.TryRecv()
		require.NoError(t, rx.Close())
		wg.Wait()
		require.NoError(t, tx.Close())
	}
}

// Concurrent TrySends never overfill a bounded channel, and fill it
// exactly: producers racing on a channel nobody receives from get exactly
// capacity values in, and after k receives exactly k more, whatever their
// Senders' stale copies of the released count say.
func TestBoundedCapacityExact(t *testing.T) {
	const capacity, producers = 100, 4
	tx, rx, err := NewBounded[int](capacity)
	require.NoError(t, err)
	defer rx.Close()
	senders := make([]*Sender[int], producers)
	for i := range senders {
		senders[i], err = tx.Clone()
		require.NoError(t, err)
	}
	fill := func() int64 {
		var accepted atomic.Int64
		var wg sync.WaitGroup
		for _, s := range senders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					err := s.TrySend(1)
					if errors.Is(err, ErrFull) {
						return
					}
					if err != nil {
						t.Errorf("TrySend: %v", err)
						return
					}
					accepted.Add(1)
				}
			}()
		}
		wg.Wait()
		return accepted.Load()
	}
	require.EqualValues(t, capacity, fill())
	require.Equal(t, capacity, rx.Len())
	for round, k := range []int{1, 37, capacity} {
		for range k {
			_, err := rx.TryRecv()
			require.NoError(t, err)
		}
		require.EqualValues(t, k, fill(), "round %d", round)
		require.Equal(t, capacity, rx.Len())
	}
}
