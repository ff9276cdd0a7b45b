//go:build linux

package proptest

import (
	"fmt"
	"slices"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/channel"
	"github.com/unipoll/unipoll/poll"
)

// The channel kind: a channel.Receiver registered with the Poll, fed by
// Senders that the state machine sends with, clones and closes. The
// channel is unbounded or bounded (capacity 1 to 4, TrySend only, so that
// nothing blocks the state machine).
//
// What the model relies on (channel/channel.go, rules S, C, D):
//   - Readable is set while a value can be received, and once the channel
//     is disconnected (the last Sender closed) for good; Hup is set at the
//     disconnection. Nothing else is ever set.
//   - Edge: a Send is a new edge only when the Receiver was not Readable
//     (a value sent while values are pending makes no event); the last
//     Sender's Close is an edge for Readable|Hup.
//   - Taking the last value (TryRecv, or a Drain to the end) clears
//     Readable at once, unless the channel is disconnected; finding
//     nothing (ErrEmpty) leaves it clear.
//   - Operations here run one at a time in the test goroutine, so there is
//     never a Send in progress while the Receiver looks: the accounting is
//     exact, and an event the model does not expect is a failure.

func init() { registerKind(chanKind{}) }

type chanKind struct{}

func (chanKind) name() string { return "chan" }

func (chanKind) open(t *rapid.T, w *world) impl {
	capacity := rapid.SampledFrom([]int{0, 0, 1, 2, 4}).Draw(t, "channel capacity (0 unbounded)")
	im := &chanImpl{capacity: capacity}
	if capacity == 0 {
		tx, rx := channel.New[int]()
		im.tx, im.rx = []*channel.Sender[int]{tx}, rx
		return im
	}
	tx, rx, err := channel.NewBounded[int](capacity)
	if err != nil {
		t.Fatalf("NewBounded(%d): %v", capacity, err)
	}
	im.tx, im.rx = []*channel.Sender[int]{tx}, rx
	return im
}

func (chanKind) ops() []op {
	return []op{
		{"Send", chanSend},
		{"Send", chanSend}, // twice as likely as the others
		{"TryRecv", chanTryRecv},
		{"Drain", chanDrain},
		{"Clone", chanClone},
		{"CloseSender", chanCloseSender},
		{"Close", chanClose},
	}
}

type chanImpl struct {
	tx           []*channel.Sender[int] // open Senders
	rx           *channel.Receiver[int]
	capacity     int
	queue        []int // the values sent and not received, in order
	next         int   // the next value to send
	disconnected bool
	rd           poll.Ready // the Receiver's readiness, as the model knows it
}

func (im *chanImpl) evented() poll.Evented { return im.rx }
func (im *chanImpl) isFd() bool            { return false }
func (im *chanImpl) filtered(_, _ poll.Ready) bool {
	return false
}

func (im *chanImpl) ready(interest poll.Ready) (sure, maybe poll.Ready) {
	return im.rd & interest, im.rd & interest
}

func (im *chanImpl) String() string {
	c := "unbounded"
	if im.capacity > 0 {
		c = fmt.Sprintf("capacity %d", im.capacity)
	}
	return fmt.Sprintf("channel %s, %d senders, %d queued, disconnected=%v, readiness %s",
		c, len(im.tx), len(im.queue), im.disconnected, im.rd)
}

func (im *chanImpl) pickSender(t *rapid.T) (int, *channel.Sender[int]) {
	if len(im.tx) == 0 {
		t.Skip("no open Sender")
	}
	i := rapid.IntRange(0, len(im.tx)-1).Draw(t, "sender")
	return i, im.tx[i]
}

// arrived records a value that made the Receiver readable.
func (im *chanImpl) arrived(w *world, s *src) {
	if im.rd&poll.Readable == 0 {
		im.rd |= poll.Readable
		w.notify(s, poll.Readable)
	}
}

// took records that the Receiver returned the value at the front.
func (im *chanImpl) took() {
	im.queue = im.queue[1:]
	if len(im.queue) == 0 && !im.disconnected {
		im.rd &^= poll.Readable
	}
}

func chanSend(t *rapid.T, w *world, s *src) {
	im := s.impl.(*chanImpl)
	i, tx := im.pickSender(t)
	v := im.next
	var err error
	if im.capacity > 0 {
		err = tx.TrySend(v)
		w.logf("%s.tx%d.TrySend(%d) = %v", s.label, i, v, err)
		if len(im.queue) == im.capacity {
			w.expectErr(t, "TrySend on a full channel", err, channel.ErrFull)
			return
		}
	} else {
		err = tx.Send(v)
		w.logf("%s.tx%d.Send(%d) = %v", s.label, i, v, err)
	}
	w.expectErr(t, "Send", err, nil)
	im.next++
	im.queue = append(im.queue, v)
	im.arrived(w, s)
}

func chanTryRecv(t *rapid.T, w *world, s *src) {
	im := s.impl.(*chanImpl)
	v, err := im.rx.TryRecv()
	w.logf("%s.TryRecv() = %d, %v", s.label, v, err)
	switch {
	case len(im.queue) > 0:
		w.expectErr(t, "TryRecv", err, nil)
		if v != im.queue[0] {
			w.fatalf(t, "TryRecv returned %d, want %d (the oldest value)", v, im.queue[0])
		}
		im.took()
	case im.disconnected:
		w.expectErr(t, "TryRecv on a drained, disconnected channel", err, channel.ErrDisconnected)
	default:
		w.expectErr(t, "TryRecv on an empty channel", err, channel.ErrEmpty)
	}
}

func chanDrain(t *rapid.T, w *world, s *src) {
	im := s.impl.(*chanImpl)
	var got []int
	for v := range im.rx.Drain() {
		got = append(got, v)
	}
	w.logf("%s.Drain() = %v", s.label, got)
	if !slices.Equal(got, im.queue) {
		w.fatalf(t, "Drain yielded %v, want %v", got, im.queue)
	}
	for range got {
		im.took()
	}
}

func chanClone(t *rapid.T, w *world, s *src) {
	im := s.impl.(*chanImpl)
	i, tx := im.pickSender(t)
	c, err := tx.Clone()
	w.logf("%s.tx%d.Clone() = tx%d, %v", s.label, i, len(im.tx), err)
	w.expectErr(t, "Clone", err, nil)
	im.tx = append(im.tx, c)
}

func chanCloseSender(t *rapid.T, w *world, s *src) {
	im := s.impl.(*chanImpl)
	i, tx := im.pickSender(t)
	err := tx.Close()
	w.logf("%s.tx%d.Close() = %v", s.label, i, err)
	w.expectErr(t, "Sender.Close", err, nil)
	w.expectErr(t, "second Sender.Close", tx.Close(), channel.ErrClosed)
	w.expectErr(t, "Send after Sender.Close", tx.Send(0), channel.ErrClosed)
	im.tx = append(im.tx[:i], im.tx[i+1:]...)
	if len(im.tx) == 0 {
		im.disconnected = true
		im.rd |= poll.Readable | poll.Hup
		w.notify(s, poll.Readable|poll.Hup)
	}
}

func chanClose(t *rapid.T, w *world, s *src) {
	im := s.impl.(*chanImpl)
	err := im.rx.Close()
	w.logf("%s.Close() = %v", s.label, err)
	w.expectErr(t, "Receiver.Close", err, nil)
	if s.registered {
		w.deregistered(s, "closed")
	}
	s.gone = true
	w.expectErr(t, "second Receiver.Close", im.rx.Close(), channel.ErrClosed)
	_, err = im.rx.TryRecv()
	w.expectErr(t, "TryRecv after Close", err, channel.ErrClosed)
	w.expectErr(t, "Register after Close", w.p.Register(im.rx, w.drawToken(t, "token"), poll.Readable, poll.Level), poll.ErrClosed)
	for _, tx := range im.tx {
		w.expectErr(t, "Send after Receiver.Close", tx.Send(1), channel.ErrDisconnected)
		w.expectErr(t, "Sender.Close after Receiver.Close", tx.Close(), nil)
	}
	im.tx = nil
}

func (im *chanImpl) check(t *rapid.T, w *world, s *src) {
	if got := im.rx.Len(); got != len(im.queue) {
		w.fatalf(t, "%s.Len() = %d, but the model has %d values queued", s.label, got, len(im.queue))
	}
}

func (im *chanImpl) release(t *rapid.T, w *world, s *src) {
	if err := im.rx.Close(); err != nil {
		t.Fatalf("%s: Receiver.Close: %v", s.label, err)
	}
	if s.registered {
		w.deregistered(s, "closed")
	}
	for _, tx := range im.tx {
		if err := tx.Close(); err != nil {
			t.Fatalf("%s: Sender.Close: %v", s.label, err)
		}
	}
	im.tx = nil
}

func (im *chanImpl) discard() {
	_ = im.rx.Close()
	for _, tx := range im.tx {
		_ = tx.Close()
	}
}
