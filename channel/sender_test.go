package channel

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/onpoll/polltest"
	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/poll"
)

const txTok = poll.Token(2)

// sleepingNow reports whether a Send is blocked in cond.Wait (a sleeper
// not yet signalled).
func (c *core[T]) sleepingNow() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sleepers > 0
}

// blockedSend starts a Send of v on tx, on a full channel, and returns once
// it is asleep; its result comes on the channel returned (sendResult).
func blockedSend[T any](t testing.TB, tx *Sender[T], rx *Receiver[T], v T) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- tx.Send(v) }()
	testsupport.WaitFor(t, "Send to block", rx.c.sleepingNow)
	return done
}

// sendResult waits for the result of a Send running in another goroutine,
// and fails if it has not returned within eventWait.
func sendResult(t testing.TB, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(eventWait):
		require.FailNow(t, "Send still blocked", "after %v", eventWait)
		return nil
	}
}

// TrySend on a full bounded channel returns ErrFull and never blocks; a
// receive makes room for exactly one more.
func TestBoundedTrySend(t *testing.T) {
	tx, rx, err := NewBounded[int](2)
	require.NoError(t, err)
	defer rx.Close()
	require.Equal(t, 2, tx.Cap())
	require.NoError(t, tx.TrySend(1))
	require.NoError(t, tx.TrySend(2))
	require.ErrorIs(t, tx.TrySend(3), ErrFull)
	require.ErrorIs(t, tx.TrySend(3), ErrFull)
	require.Equal(t, 2, rx.Len())
	v, err := rx.TryRecv()
	require.NoError(t, err)
	require.Equal(t, 1, v)
	require.NoError(t, tx.TrySend(3))
	require.ErrorIs(t, tx.TrySend(4), ErrFull)
	got, err := recvAll(t, rx)
	require.ErrorIs(t, err, ErrEmpty)
	require.Equal(t, []int{2, 3}, got)
}

// A bounded Sender under Edge: Writable at registration (it has room),
// cleared when its own Send fills the channel, and an edge again when room
// appears.
func TestSenderWritableEdge(t *testing.T) {
	p := polltest.New(t)
	tx, rx, err := NewBounded[int](2)
	require.NoError(t, err)
	defer rx.Close()
	require.NoError(t, p.Register(tx, txTok, poll.Writable, poll.Edge))
	require.Equal(t, poll.Writable, waitEvent(t, p, txTok))
	expectNoEvent(t, p, txTok)
	require.NoError(t, tx.TrySend(1))
	require.NoError(t, tx.TrySend(2)) // fills it
	require.ErrorIs(t, tx.TrySend(3), ErrFull)
	expectNoEvent(t, p, txTok)
	_, err = rx.TryRecv()
	require.NoError(t, err)
	require.Equal(t, poll.Writable, waitEvent(t, p, txTok))
	expectNoEvent(t, p, txTok)
	require.NoError(t, tx.TrySend(3))
	require.ErrorIs(t, tx.TrySend(4), ErrFull)
	for range rx.Drain() {
	}
	require.Equal(t, poll.Writable, waitEvent(t, p, txTok))
}

// Under Level a bounded Sender is reported on every Poll call while it has
// room, and not once it filled the channel.
func TestSenderWritableLevel(t *testing.T) {
	p := polltest.New(t)
	tx, rx, err := NewBounded[int](1)
	require.NoError(t, err)
	defer rx.Close()
	require.NoError(t, p.Register(tx, txTok, poll.Writable, poll.Level))
	for range 3 {
		require.Equal(t, poll.Writable, pollOnce(t, p, 0)[txTok])
	}
	require.NoError(t, tx.Send(1))
	expectNoEvent(t, p, txTok)
	_, err = rx.TryRecv()
	require.NoError(t, err)
	for range 3 {
		require.Equal(t, poll.Writable, waitEvent(t, p, txTok))
	}
}

// Each Sender has its own Registration: a clone registered with another
// Poll is made Writable when room appears after it found the channel full.
func TestSenderCloneWritable(t *testing.T) {
	p1, p2 := polltest.New(t), polltest.New(t)
	tx, rx, err := NewBounded[int](1)
	require.NoError(t, err)
	defer rx.Close()
	tx2, err := tx.Clone()
	require.NoError(t, err)
	require.NoError(t, p1.Register(tx, txTok, poll.Writable, poll.Edge))
	require.NoError(t, p2.Register(tx2, txTok, poll.Writable, poll.Edge))
	waitEvent(t, p1, txTok)
	waitEvent(t, p2, txTok)
	require.NoError(t, tx.TrySend(1))
	require.ErrorIs(t, tx2.TrySend(2), ErrFull)
	expectNoEvent(t, p1, txTok)
	expectNoEvent(t, p2, txTok)
	_, err = rx.TryRecv()
	require.NoError(t, err)
	waitEvent(t, p1, txTok)
	waitEvent(t, p2, txTok)
	require.NoError(t, tx2.TrySend(2))
}

// An unbounded Sender is always Writable.
func TestUnboundedSenderWritable(t *testing.T) {
	p := polltest.New(t)
	tx, rx := New[int]()
	defer rx.Close()
	require.Equal(t, 0, tx.Cap())
	require.NoError(t, p.Register(tx, txTok, poll.Writable, poll.Level))
	for i := range 3 {
		require.NoError(t, tx.Send(i))
		require.Equal(t, poll.Writable, pollOnce(t, p, 0)[txTok])
	}
}

// Send on a full bounded channel blocks until a receive makes room.
func TestBoundedSendBlocks(t *testing.T) {
	tx, rx, err := NewBounded[int](1)
	require.NoError(t, err)
	defer rx.Close()
	require.NoError(t, tx.Send(1))
	done := blockedSend(t, tx, rx, 2)
	select {
	case err := <-done:
		t.Fatalf("Send returned (%v) on a full channel", err)
	default:
	}
	v, err := rx.TryRecv()
	require.NoError(t, err)
	require.Equal(t, 1, v)
	require.NoError(t, sendResult(t, done))
	v, err = rx.TryRecv()
	require.NoError(t, err)
	require.Equal(t, 2, v)
}

// A blocked Send wakes up and fails when the Receiver closes
// (ErrDisconnected) or when its own Sender is closed (ErrClosed); closing
// the Receiver also makes every Sender Writable|Hup.
func TestBoundedSendUnblockedByClose(t *testing.T) {
	t.Run("receiver", func(t *testing.T) {
		p := polltest.New(t)
		tx, rx, err := NewBounded[int](1)
		require.NoError(t, err)
		require.NoError(t, p.Register(tx, txTok, poll.Writable|poll.Hup, poll.Edge))
		waitEvent(t, p, txTok)
		require.NoError(t, tx.Send(1))
		done := blockedSend(t, tx, rx, 2)
		require.NoError(t, rx.Close())
		require.ErrorIs(t, sendResult(t, done), ErrDisconnected)
		require.Equal(t, poll.Writable|poll.Hup, waitEvent(t, p, txTok))
		require.ErrorIs(t, tx.Send(3), ErrDisconnected)
		require.NoError(t, tx.Close())
	})
	t.Run("sender", func(t *testing.T) {
		tx, rx, err := NewBounded[int](1)
		require.NoError(t, err)
		defer rx.Close()
		require.NoError(t, tx.Send(1))
		done := blockedSend(t, tx, rx, 2)
		require.NoError(t, tx.Close())
		require.ErrorIs(t, sendResult(t, done), ErrClosed)
		v, err := rx.TryRecv()
		require.NoError(t, err)
		require.Equal(t, 1, v)
		_, err = rx.TryRecv()
		require.ErrorIs(t, err, ErrDisconnected)
	})
}

// A Sender cloned after the Receiver closed is Writable|Hup at once.
func TestCloneAfterReceiverClose(t *testing.T) {
	p := polltest.New(t)
	tx, rx := New[int]()
	require.NoError(t, rx.Close())
	tx2, err := tx.Clone()
	require.NoError(t, err)
	require.NoError(t, p.Register(tx2, txTok, poll.Writable|poll.Hup, poll.Edge))
	require.Equal(t, poll.Writable|poll.Hup, waitEvent(t, p, txTok))
	require.ErrorIs(t, tx2.Send(1), ErrDisconnected)
	require.NoError(t, tx.Close())
	require.NoError(t, tx2.Close())
}
