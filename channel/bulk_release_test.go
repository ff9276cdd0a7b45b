package channel

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/onpoll/polltest"
	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/poll"
)

// One receive that frees room for several Senders waiting on a full
// bounded channel (a Drain's batch gives back the capacity of every value
// in it at once) lets all of them go on, as many as there is room for,
// with no further receive: the sleepers pass the signal on (passLocked in
// channel.go) and every waiting Sender is made Writable.

// sleeperCount is the number of Sends asleep in cond.Wait, not yet
// signalled. Counted under mu, which a sleeper holds from the moment it
// counts itself until cond.Wait releases it, so each one counted is in
// cond.Wait.
func (c *core[T]) sleeperCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sleepers
}

// sent is the result of one blocked Send.
type sent struct {
	v   int
	err error
}

// blockSends starts one Send of each of vals, each on a Clone of tx of its
// own, on a full channel, and waits until all of them are asleep. The
// Clones are closed at the test's cleanup.
func blockSends(t *testing.T, tx *Sender[int], rx *Receiver[int], vals []int) <-chan sent {
	t.Helper()
	done := make(chan sent, len(vals))
	for _, v := range vals {
		s, err := tx.Clone()
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		go func() { done <- sent{v, s.Send(v)} }()
	}
	testsupport.WaitFor(t, fmt.Sprintf("%d Sends asleep", len(vals)), func() bool {
		return rx.c.sleeperCount() == len(vals)
	})
	return done
}

// collect waits for n results of blocked Sends (each within eventWait of
// the last) and returns their values, sorted; each must have succeeded.
func collect(t *testing.T, done <-chan sent, n int, why string) []int {
	t.Helper()
	var got []int
	for range n {
		r := sendResult2(t, done, fmt.Sprintf("%s: %d of %d blocked Sends returned", why, len(got), n))
		require.NoError(t, r.err, "blocked Send of %d", r.v)
		got = append(got, r.v)
	}
	sort.Ints(got)
	return got
}

// sendResult2 is sendResult for a channel of sent.
func sendResult2(t *testing.T, done <-chan sent, msg string) sent {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(eventWait):
		require.FailNow(t, "Sends still blocked", "%s after %v", msg, eventWait)
		return sent{}
	}
}

func TestBulkReceiveFreesSeveralBlockedSends(t *testing.T) {
	const capacity = 4
	for _, waiting := range []int{2, capacity, capacity + 2} {
		for _, how := range []string{"drain-stopped", "drain-to-end"} {
			t.Run(fmt.Sprintf("%d-waiting/%s", waiting, how), func(t *testing.T) {
				bulkReceiveFreesSends(t, capacity, waiting, how == "drain-stopped")
			})
		}
	}
}

// bulkReceiveFreesSends fills a channel of the given capacity, blocks
// waiting Sends on it, and receives once in bulk: a Drain stopped after
// its first value (one batch, which gives back the whole capacity), or a
// Drain to its end. After that receive no value is received until the
// Sends it made room for have all returned.
func bulkReceiveFreesSends(t *testing.T, capacity, waiting int, stop bool) {
	tx, rx, err := NewBounded[int](capacity)
	require.NoError(t, err)
	defer rx.Close()
	for i := range capacity {
		require.NoError(t, tx.Send(i))
	}
	var vals []int
	for i := range waiting {
		vals = append(vals, 100+i)
	}
	done := blockSends(t, tx, rx, vals)

	var drained []int
	for v := range rx.Drain() {
		drained = append(drained, v)
		if stop {
			break
		}
	}
	freed := min(waiting, capacity) // the room the first batch gave back
	if stop {
		require.Equal(t, []int{0}, drained)
	} else {
		require.GreaterOrEqual(t, len(drained), capacity)
		require.Equal(t, []int{0, 1, 2, 3}, drained[:capacity])
		// The Drain may have received some of the freed values, and made
		// room for more Sends with them.
		freed = min(waiting, capacity+len(drained)-capacity)
	}
	got := collect(t, done, freed, "after one bulk receive")
	require.Len(t, got, freed)
	if waiting > freed {
		testsupport.WaitFor(t, "the others asleep again", func() bool {
			return rx.c.sleeperCount() == waiting-freed
		})
		select {
		case r := <-done:
			require.FailNow(t, "a Send returned on a full channel", "value %d, %v", r.v, r.err)
		default:
		}
	}
	// Every value is there once: the handed-back rest of the batch, then
	// the freed Sends' values (in no particular order: they raced). Each
	// receive makes room for a Send still waiting, whose value comes
	// after these.
	pending := make([]int, len(got)+capacity-len(drained))
	require.Equal(t, len(pending), rx.Len())
	for i := range pending {
		pending[i], err = rx.TryRecv()
		require.NoError(t, err)
	}
	all := append(drained, pending...)
	if stop {
		require.Equal(t, []int{0, 1, 2, 3}, all[:capacity])
	}
	rest := append([]int(nil), all[capacity:]...)
	sort.Ints(rest)
	require.Equal(t, got, rest, "the freed Sends' values, received once each")
	// The receives just made make room for the Sends still waiting.
	if waiting > freed {
		var left []int
		for _, v := range vals {
			if !slices.Contains(got, v) {
				left = append(left, v)
			}
		}
		require.Equal(t, left, collectRest(t, rx, done, waiting-freed))
	}
}

// collectRest waits for the last n blocked Sends, receiving as it goes,
// and returns their values sorted.
func collectRest(t *testing.T, rx *Receiver[int], done <-chan sent, n int) []int {
	t.Helper()
	got := collect(t, done, n, "after receiving everything")
	var vals []int
	for len(vals) < n {
		v, err := rx.TryRecv()
		require.NoError(t, err)
		vals = append(vals, v)
	}
	sort.Ints(vals)
	require.Equal(t, got, vals)
	return vals
}

// The same with Senders waiting for Writable instead of blocking: one
// Drain batch makes every one of them Writable, and as many TrySends as
// it gave back room for then succeed.
func TestBulkReceiveMakesEveryWaitingSenderWritable(t *testing.T) {
	const capacity, waiting = 3, 5
	tx, rx, err := NewBounded[int](capacity)
	require.NoError(t, err)
	defer rx.Close()
	p := polltest.New(t)
	senders := make([]*Sender[int], waiting)
	for i := range senders {
		senders[i], err = tx.Clone()
		require.NoError(t, err)
		defer senders[i].Close()
		require.NoError(t, p.Register(senders[i], poll.Token(10+i), poll.Writable, poll.Edge))
	}
	for i := range capacity {
		require.NoError(t, tx.Send(i))
	}
	for i, s := range senders {
		require.ErrorIs(t, s.TrySend(100+i), ErrFull)
	}
	got := pollOnce(t, p, 0) // the Writable edges of their creation, at most
	for tok, r := range got {
		require.Equal(t, poll.Writable, r, "token %d", tok)
	}
	expectNoEvent(t, p, 10)

	for range rx.Drain() {
		break // one batch: the whole capacity given back
	}
	seen := map[poll.Token]bool{}
	testsupport.WaitFor(t, "every waiting Sender Writable", func() bool {
		for tok, r := range pollOnce(t, p, 0) {
			if r&poll.Writable != 0 {
				seen[tok] = true
			}
		}
		return len(seen) == waiting
	})
	accepted := 0
	for i, s := range senders {
		if err := s.TrySend(100 + i); err == nil {
			accepted++
		} else {
			require.ErrorIs(t, err, ErrFull)
		}
	}
	require.Equal(t, capacity, accepted, "TrySends accepted after one batch gave back the capacity")
	require.Equal(t, capacity-1+capacity, rx.Len(), "the batch's handed-back rest and the new values")
}
