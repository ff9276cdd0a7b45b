package channel

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/onpoll/polltest"
	"github.com/unipoll/unipoll/poll"
)

const rxTok = poll.Token(1)

func sendAll(t testing.TB, tx *Sender[int], vals ...int) {
	t.Helper()
	for _, v := range vals {
		require.NoError(t, tx.Send(v))
	}
}

// Edge: one event per transition to readable. Values sent while the
// Receiver is readable and not yet drained make no new edge; a value sent
// after TryRecv returned ErrEmpty does.
func TestReceiverEdge(t *testing.T) {
	p, tx, rx := watchedRx(t, poll.Readable, poll.Edge)
	expectNoEvent(t, p, rxTok)

	sendAll(t, tx, 1, 2, 3)
	require.Equal(t, poll.Readable, waitEvent(t, p, rxTok))
	expectNoEvent(t, p, rxTok) // no new value: no new edge

	v, err := rx.TryRecv()
	require.NoError(t, err)
	require.Equal(t, 1, v)
	sendAll(t, tx, 4) // still readable: no edge
	expectNoEvent(t, p, rxTok)

	got, err := recvAll(t, rx)
	require.ErrorIs(t, err, ErrEmpty)
	require.Equal(t, []int{2, 3, 4}, got)
	expectNoEvent(t, p, rxTok)

	sendAll(t, tx, 5) // after ErrEmpty: an edge
	require.Equal(t, poll.Readable, waitEvent(t, p, rxTok))
	got, err = recvAll(t, rx)
	require.ErrorIs(t, err, ErrEmpty)
	require.Equal(t, []int{5}, got)
}

// Edge: taking the last value is enough to make the next value an edge
// (TryRecv pops one ahead); the consumer need not see ErrEmpty first.
func TestReceiverEdgeAfterLastValue(t *testing.T) {
	p, tx, rx := watchedRx(t, poll.Readable, poll.Edge)
	sendAll(t, tx, 1)
	waitEvent(t, p, rxTok)
	v, err := rx.TryRecv()
	require.NoError(t, err)
	require.Equal(t, 1, v)
	sendAll(t, tx, 2)
	waitEvent(t, p, rxTok)
}

// Edge: a Drain stopped right after the last value leaves the Receiver as
// TryRecv would (R cleared), so the next value is an edge; a Drain stopped
// with values left keeps it readable. Drain does not clear R between its
// batches, only where it stops.
func TestReceiverEdgeAfterDrainStops(t *testing.T) {
	p, tx, rx := watchedRx(t, poll.Readable, poll.Edge)
	sendAll(t, tx, 1, 2)
	waitEvent(t, p, rxTok)
	for v := range rx.Drain() {
		if v == 2 { // the last value: stop without looking further
			break
		}
	}
	sendAll(t, tx, 3)
	waitEvent(t, p, rxTok)
	for v := range rx.Drain() {
		require.Equal(t, 3, v)
		sendAll(t, tx, 4, 5) // arrive while R is still set: no edge of their own
		break
	}
	expectNoEvent(t, p, rxTok)
	got, err := recvAll(t, rx)
	require.ErrorIs(t, err, ErrEmpty)
	require.Equal(t, []int{4, 5}, got)
	sendAll(t, tx, 6)
	waitEvent(t, p, rxTok)
}

// Level: reported on every Poll call while a value is pending, and no
// longer once the last one is taken.
func TestReceiverLevel(t *testing.T) {
	p, tx, rx := watchedRx(t, poll.Readable, poll.Level)
	expectNoEvent(t, p, rxTok)
	sendAll(t, tx, 1, 2)
	for range 3 {
		require.Equal(t, poll.Readable, pollOnce(t, p, 0)[rxTok])
	}
	_, err := rx.TryRecv()
	require.NoError(t, err)
	require.Equal(t, poll.Readable, pollOnce(t, p, 0)[rxTok])
	_, err = rx.TryRecv()
	require.NoError(t, err)
	expectNoEvent(t, p, rxTok)
	sendAll(t, tx, 3)
	require.Equal(t, poll.Readable, waitEvent(t, p, rxTok))
	require.Equal(t, poll.Readable, pollOnce(t, p, 0)[rxTok])
}

// Oneshot: one event, then nothing until Reregister, which reports the
// Receiver again at once if values are pending.
func TestReceiverOneshot(t *testing.T) {
	for _, mode := range []poll.PollOpt{poll.Edge, poll.Level} {
		t.Run(mode.String(), func(t *testing.T) {
			p := polltest.New(t)
			tx, rx := New[int]()
			defer rx.Close()
			opts := mode | poll.Oneshot
			require.NoError(t, p.Register(rx, rxTok, poll.Readable, opts))
			sendAll(t, tx, 1)
			waitEvent(t, p, rxTok)
			expectNoEvent(t, p, rxTok) // disarmed, although still readable
			sendAll(t, tx, 2)
			expectNoEvent(t, p, rxTok)
			require.NoError(t, p.Reregister(rx, rxTok, poll.Readable, opts))
			require.Equal(t, poll.Readable, waitEvent(t, p, rxTok))
			got, err := recvAll(t, rx)
			require.ErrorIs(t, err, ErrEmpty)
			require.Equal(t, []int{1, 2}, got)
			require.NoError(t, p.Reregister(rx, rxTok, poll.Readable, opts))
			expectNoEvent(t, p, rxTok) // re-armed, nothing pending
			sendAll(t, tx, 3)
			waitEvent(t, p, rxTok)
		})
	}
}

// Values sent before the Receiver is registered are reported by the first
// Poll call after Register, in every mode.
func TestReceiverRegisterWhilePending(t *testing.T) {
	for _, opts := range []poll.PollOpt{poll.Edge, poll.Level, poll.Edge | poll.Oneshot} {
		t.Run(opts.String(), func(t *testing.T) {
			p := polltest.New(t)
			tx, rx := New[int]()
			defer rx.Close()
			sendAll(t, tx, 1, 2)
			require.NoError(t, p.Register(rx, rxTok, poll.Readable, opts))
			require.Equal(t, poll.Readable, pollOnce(t, p, 0)[rxTok])
			got, err := recvAll(t, rx)
			require.ErrorIs(t, err, ErrEmpty)
			require.Equal(t, []int{1, 2}, got)
		})
	}
}

// Readiness outside the interest is never reported: a Receiver registered
// for Writable only is not reported for values.
func TestReceiverInterest(t *testing.T) {
	p, tx, rx := watchedRx(t, poll.Writable, poll.Level)
	sendAll(t, tx, 1)
	expectNoEvent(t, p, rxTok)
	require.NoError(t, p.Reregister(rx, rxTok, poll.Readable, poll.Level))
	require.Equal(t, poll.Readable, waitEvent(t, p, rxTok))
}

// Deregister mid-stream: nothing is reported while deregistered, values
// stay receivable, and registering again reports what is pending.
func TestReceiverDeregisterMidStream(t *testing.T) {
	p, tx, rx := watchedRx(t, poll.Readable, poll.Edge)
	sendAll(t, tx, 1)
	require.NoError(t, p.Deregister(rx))
	expectNoEvent(t, p, rxTok)
	sendAll(t, tx, 2)
	expectNoEvent(t, p, rxTok)
	require.Equal(t, 2, rx.Len())
	require.ErrorIs(t, p.Deregister(rx), poll.ErrNotRegistered)

	require.NoError(t, p.Register(rx, rxTok+1, poll.Readable, poll.Edge))
	require.Equal(t, poll.Readable, waitEvent(t, p, rxTok+1))
	got, err := recvAll(t, rx)
	require.ErrorIs(t, err, ErrEmpty)
	require.Equal(t, []int{1, 2}, got)
}

// Close mid-stream, with an event pending: no Poll call started afterwards
// reports the Receiver; Sends fail with ErrDisconnected; the Receiver's own
// methods return ErrClosed.
func TestReceiverCloseMidStream(t *testing.T) {
	for _, opts := range []poll.PollOpt{poll.Edge, poll.Level} {
		t.Run(opts.String(), func(t *testing.T) {
			p := polltest.New(t)
			tx, rx := New[int]()
			require.NoError(t, p.Register(rx, rxTok, poll.Readable, opts))
			sendAll(t, tx, 1, 2)
			require.NoError(t, rx.Close())
			expectNoEvent(t, p, rxTok)
			require.ErrorIs(t, tx.Send(3), ErrDisconnected)
			require.ErrorIs(t, tx.TrySend(3), ErrDisconnected)
			_, err := rx.TryRecv()
			require.ErrorIs(t, err, ErrClosed)
			require.Equal(t, 0, rx.Len())
			require.ErrorIs(t, rx.Close(), ErrClosed)
			require.ErrorIs(t, p.Reregister(rx, rxTok, poll.Readable, opts), poll.ErrClosed)
			for range rx.Drain() {
				t.Fatal("Drain yielded a value after Close")
			}
		})
	}
}

// When the last Sender closes, the Receiver becomes readable (with Hup for
// an interest that has it), returns the values still queued and then
// ErrDisconnected, and stays readable.
func TestReceiverDisconnect(t *testing.T) {
	p := polltest.New(t)
	tx, rx := New[int]()
	defer rx.Close()
	tx2, err := tx.Clone()
	require.NoError(t, err)
	require.NoError(t, p.Register(rx, rxTok, poll.Readable|poll.Hup, poll.Edge))
	sendAll(t, tx, 1)
	sendAll(t, tx2, 2)
	require.NoError(t, tx.Close())
	waitEvent(t, p, rxTok)
	v, err := rx.TryRecv()
	require.NoError(t, err)
	require.Equal(t, 1, v)
	require.NoError(t, tx2.Close()) // the last one
	require.Equal(t, poll.Readable|poll.Hup, waitEvent(t, p, rxTok))
	v, err = rx.TryRecv()
	require.NoError(t, err)
	require.Equal(t, 2, v)
	for range 3 {
		_, err = rx.TryRecv()
		require.ErrorIs(t, err, ErrDisconnected)
	}
	require.NoError(t, p.Reregister(rx, rxTok, poll.Readable, poll.Level))
	for range 3 {
		require.Equal(t, poll.Readable, pollOnce(t, p, 0)[rxTok])
	}
	require.ErrorIs(t, tx.Close(), ErrClosed)
	require.ErrorIs(t, tx.Send(1), ErrClosed)
	_, err = tx.Clone()
	require.ErrorIs(t, err, ErrClosed)
}

// Drain yields what is there, in order, and stops at ErrEmpty; stopped
// early, it keeps the rest for the next receive.
func TestReceiverDrain(t *testing.T) {
	tx, rx := New[int]()
	defer rx.Close()
	const n = 3*drainBatch + 5
	for i := range n {
		require.NoError(t, tx.Send(i))
	}
	next := 0
	for v := range rx.Drain() {
		require.Equal(t, next, v)
		next++
		if next == drainBatch+7 {
			break
		}
	}
	require.Equal(t, n-next, rx.Len())
	v, err := rx.TryRecv()
	require.NoError(t, err)
	require.Equal(t, next, v)
	next++
	for v := range rx.Drain() {
		require.Equal(t, next, v)
		next++
	}
	require.Equal(t, n, next)
	_, err = rx.TryRecv()
	require.ErrorIs(t, err, ErrEmpty)
}

// The zero value and nil pointers of both types return errors and never
// panic; so do bad constructor arguments.
func TestZeroAndNil(t *testing.T) {
	p := polltest.New(t)
	check := func(err error) {
		t.Helper()
		require.ErrorIs(t, err, ErrInvalidArgument)
		require.True(t, errors.Is(err, poll.ErrInvalidArgument))
	}
	for _, s := range []*Sender[int]{nil, new(Sender[int])} {
		check(s.Send(1))
		check(s.TrySend(1))
		c, err := s.Clone()
		require.Nil(t, c)
		check(err)
		check(s.Close())
		check(s.Register(p, 1, poll.Writable, poll.Edge))
		check(s.Reregister(p, 1, poll.Writable, poll.Edge))
		check(s.Deregister(p))
		require.Equal(t, 0, s.Cap())
	}
	for _, r := range []*Receiver[int]{nil, new(Receiver[int])} {
		_, err := r.TryRecv()
		check(err)
		check(r.Close())
		check(r.Register(p, 1, poll.Readable, poll.Edge))
		check(r.Reregister(p, 1, poll.Readable, poll.Edge))
		check(r.Deregister(p))
		require.Equal(t, 0, r.Len())
		for range r.Drain() {
			t.Fatal("zero Receiver yielded a value")
		}
	}
	check(p.Register((*Receiver[int])(nil), 1, poll.Readable, poll.Edge))
	for _, n := range []int{0, -1} {
		s, r, err := NewBounded[int](n)
		require.Nil(t, s)
		require.Nil(t, r)
		check(err)
	}
}
