package poll

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Expired deadlines piling up (issue 22, hole 3). A TimerQueue's expired
// list is a ring that starts with room for 16 keys and doubles when full.
// Taking keys moves the ring's head, so a ring that has handed out some
// keys and then takes in more than the room it has left wraps around its
// end and grows while its head is not at the start of its memory: a
// growth that copies the keys in memory order rather than from the head
// hands them out in the wrong order. Every case here takes some expired
// keys, then lets more than the room left expire in one Poll call, and
// checks that TryRecv hands out every key in deadline order, the ones left
// from the first batch first.
//
// The wheel's clock is moved by the test (Wheel.Advance), so each batch
// comes due in exactly one Poll call, whatever the machine's load; the
// deadlines are a second apart, set in decreasing order, so deadline order
// is the reverse of the order of Add and no scheduling delay between two
// Adds can change it.
func TestTimerQueueExpiredPileUp(t *testing.T) {
	const room = 16 // the ring's first capacity (internal/base/ring, Ring.Push)
	p := newPollConfig(t, Config{WheelTick: time.Millisecond})
	ev := NewEvents(4)
	cases := 0
	for first := 1; first <= room; first++ {
		for take := 1; take <= first; take++ {
			left := first - take
			for more := room - left + 1; more <= room-left+3; more++ {
				pileUp(t, p, ev, first, take, more)
				cases++
			}
		}
	}
	t.Logf("%d cases", cases)
}

// pileUp runs one case on a fresh TimerQueue of p: first deadlines expire
// in one Poll call, take of them are taken, more deadlines expire in the
// next Poll call, and everything is taken.
func pileUp(t *testing.T, p *Poll, ev *Events, first, take, more int) {
	what := fmt.Sprintf("%d expired, %d taken, %d more", first, take, more)
	q := NewTimerQueue(0)
	defer func() { require.NoError(t, q.Close()) }()
	require.NoError(t, p.Register(q, 1, Readable, Edge))

	// addBatch adds n deadlines 1s, 2s, ... ns from now, the latest first,
	// with keys base, base+1, ...; it returns the keys in deadline order.
	addBatch := func(base uint64, n int) []uint64 {
		keys := make([]uint64, n)
		for i := range n {
			keys[i] = base + uint64(i)
			_, err := q.Add(time.Duration(n-i)*time.Second, keys[i])
			require.NoError(t, err)
		}
		slices.Reverse(keys)
		return keys
	}
	// expireAll moves the clock past every deadline and makes one Poll
	// call, which fires them all, and checks that it did.
	expireAll := func(n int, waiting int) {
		p.wheel.Advance(time.Duration(n+1) * time.Second)
		_, err := p.Poll(ev, 0)
		require.NoError(t, err)
		st := q.Stats()
		require.Zero(t, st.Pending, "%s: one Poll call after every deadline passed left some pending", what)
		require.Equal(t, waiting, st.Expired, "%s: expired keys waiting", what)
	}

	want := addBatch(0, first)
	expireAll(first, first)
	for _, k := range want[:take] {
		got, ok := q.TryRecv()
		require.True(t, ok, "%s: TryRecv found nothing", what)
		require.Equal(t, k, got, "%s: first batch: key out of deadline order", what)
	}
	want = append(want[take:], addBatch(1000, more)...)
	expireAll(more, len(want))
	for i, k := range want {
		got, ok := q.TryRecv()
		require.True(t, ok, "%s: TryRecv handed out only %d of %d expired keys", what, i, len(want))
		require.Equal(t, k, got, "%s: key %d of %d after the pile-up is out of deadline order (handed out before it: %v)",
			what, i, len(want), want[:i])
	}
	_, ok := q.TryRecv()
	require.False(t, ok, "%s: TryRecv after every expired key was taken", what)
	require.Equal(t, TimerStats{Fired: uint64(first + more)}, q.Stats(), what)
}
