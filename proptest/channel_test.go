//go:build linux

package proptest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/channel"
	"github.com/unipoll/unipoll/poll"
)

// TestChannelStateMachine is the state machine with channels as the only
// kind of source (model_channel.go): sends, receives, drains, clones and
// closes of Senders, and Receiver closes, between Register, Reregister,
// Deregister and Poll calls in every mode, every Poll result checked
// against the model. (TestStateMachine mixes channels with the other
// kinds.)
func TestChannelStateMachine(t *testing.T) {
	forBackends(t, func(t *testing.T, b string) {
		// A channel's interesting states (full, with several Sends
		// blocked, with values handed back by a Drain) take several of
		// its operations in a row to reach.
		checkScaled(t, stateMachineChecks, stateMachineWeighted(backendOf(b), []kind{chanKind{}}, 3))
	})
	t.Logf("channel kind, over the binary so far: %d Sends blocked, %d receives that let several go on at once, %d Drains stopped early, %d handed-back values taken",
		totalsChan.blocked.Load(), totalsChan.bulk.Load(), totalsChan.stopped.Load(), totalsChan.givenTaken.Load())
}

// TestChannelConcurrentSenders: a drawn number of producers, each with its
// own Sender (a Clone), send a drawn number of values concurrently on an
// unbounded or bounded channel (blocking Send, or TrySend driven by a
// Writable registration on the producer's own Poll), while one consumer
// receives through a Poll in a drawn mode (TryRecv or Drain until ErrEmpty
// after each event, Reregister after each event if oneshot). Every value
// arrives exactly once and in its producer's order, the consumer learns of
// the disconnection only after the last value, and a Poll call that waits
// blockLimit with values pending is a lost readiness.
func TestChannelConcurrentSenders(t *testing.T) {
	forBackends(t, func(t *testing.T, b string) {
		checkScaled(t, 1, channelConcurrent(b))
	})
}

type chanMsg struct{ producer, seq int }

func channelConcurrent(backend string) func(*rapid.T) {
	return func(t *rapid.T) {
		producers := rapid.IntRange(1, 4).Draw(t, "producers")
		counts := rapid.SliceOfN(rapid.IntRange(0, 300), producers, producers).Draw(t, "values per producer")
		capacity := rapid.SampledFrom([]int{0, 1, 3, 16}).Draw(t, "capacity (0 unbounded)")
		writableDriven := capacity > 0 && rapid.Bool().Draw(t, "producers use TrySend and Writable")
		opts := rapid.SampledFrom(optsChoices).Draw(t, "consumer opts")
		drain := rapid.Bool().Draw(t, "consumer uses Drain")
		totals.rounds.Add(1)

		p, err := poll.NewWithConfig(poll.Config{Backend: backend})
		if err != nil {
			t.Fatalf("poll: %v", err)
		}
		defer p.Close()
		var tx *channel.Sender[chanMsg]
		var rx *channel.Receiver[chanMsg]
		if capacity > 0 {
			if tx, rx, err = channel.NewBounded[chanMsg](capacity); err != nil {
				t.Fatalf("NewBounded: %v", err)
			}
		} else {
			tx, rx = channel.New[chanMsg]()
		}
		var wg sync.WaitGroup
		defer func() { // on failure too: unblock the producers first
			_ = rx.Close()
			wg.Wait()
		}()
		if err := p.Register(rx, 1, poll.Readable, opts); err != nil {
			t.Fatalf("Register: %v", err)
		}

		errs := make(chan error, producers)
		for i := range producers {
			s, err := tx.Clone()
			if err != nil {
				t.Fatalf("Clone: %v", err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer s.Close()
				if err := produce(s, backend, i, counts[i], writableDriven); err != nil {
					errs <- fmt.Errorf("producer %d: %w", i, err)
				}
			}()
		}
		if err := tx.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}

		next := make([]int, producers)
		ev := poll.NewEvents(2)
		got := 0
		check := func(m chanMsg) {
			if m.seq != next[m.producer] {
				t.Fatalf("producer %d: received value %d, want %d", m.producer, m.seq, next[m.producer])
			}
			next[m.producer]++
			got++
		}
		for {
			select {
			case err := <-errs:
				t.Fatal(err)
			default:
			}
			n, err := p.Poll(ev, blockLimit)
			if err != nil {
				t.Fatalf("Poll: %v", err)
			}
			if n == 0 {
				t.Fatalf("lost readiness: no event for %v with %d values pending (%d received)", blockLimit, rx.Len(), got)
			}
			for {
				if drain {
					for m := range rx.Drain() {
						check(m)
					}
				}
				m, err := rx.TryRecv()
				if errors.Is(err, channel.ErrEmpty) {
					break
				}
				if errors.Is(err, channel.ErrDisconnected) {
					for i, c := range counts {
						if next[i] != c {
							t.Fatalf("disconnected after %d of producer %d's %d values", next[i], i, c)
						}
					}
					return
				}
				if err != nil {
					t.Fatalf("TryRecv: %v", err)
				}
				check(m)
			}
			if opts.IsOneshot() {
				if err := p.Reregister(rx, 1, poll.Readable, opts); err != nil {
					t.Fatalf("Reregister: %v", err)
				}
			}
		}
	}
}

// produce sends n values: with Send, or with TrySend and a wait for a
// Writable event on a Poll of its own after ErrFull.
func produce(s *channel.Sender[chanMsg], backend string, id, n int, writableDriven bool) error {
	if !writableDriven {
		for j := range n {
			if err := s.Send(chanMsg{id, j}); err != nil {
				return err
			}
		}
		return nil
	}
	p, err := poll.NewWithConfig(poll.Config{Backend: backend})
	if err != nil {
		return err
	}
	defer p.Close()
	if err := p.Register(s, 2, poll.Writable, poll.Edge); err != nil {
		return err
	}
	ev := poll.NewEvents(1)
	for j := 0; j < n; {
		err := s.TrySend(chanMsg{id, j})
		if err == nil {
			j++
			continue
		}
		if !errors.Is(err, channel.ErrFull) {
			return err
		}
		if k, err := p.Poll(ev, blockLimit); err != nil || k == 0 {
			return fmt.Errorf("no Writable event within %v after ErrFull (%v)", blockLimit, err)
		}
	}
	return nil
}
