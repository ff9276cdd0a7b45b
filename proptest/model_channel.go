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
// Senders that the state machine sends with (Send, TrySend, and a
// blocking Send in a goroutine of its own), clones and closes. The channel
// is unbounded or bounded (capacity 1 to 4). Its observable state is
// modelled whole and checked after every step: Len, the values pending
// (in the order each Sender sent them; model_channel_pending.go), how
// much room a bounded channel has (which TrySend and Send show), which
// Sends are blocked waiting for room and which Senders are closed
// (model_channel_blocked.go); every value received is checked against the
// pending ones, and receives include Drains whose loop stops early
// (model_channel_recv.go).
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
//   - A bounded channel's capacity is taken by every value sent and not
//     yet received, except those a Drain handed back (its batch gave their
//     capacity back): a TrySend is refused exactly when none is left, and a
//     Send blocks exactly then.
//   - Operations here run one at a time in the test goroutine, except the
//     blocked Sends, which the model waits for whenever a step makes room
//     for them: there is never a Send in progress while the Receiver
//     looks, so the accounting is exact, and an event the model does not
//     expect is a failure.

func init() { registerKind(chanKind{}) }

type chanKind struct{}

func (chanKind) name() string { return "chan" }

func (chanKind) open(t *rapid.T, w *world) impl {
	capacity := rapid.SampledFrom([]int{0, 0, 1, 2, 4}).Draw(t, "channel capacity (0 unbounded)")
	im := newChanImpl(capacity)
	if capacity == 0 {
		tx, rx := channel.New[int]()
		im.addSender(tx)
		im.rx = rx
		return im
	}
	tx, rx, err := channel.NewBounded[int](capacity)
	if err != nil {
		t.Fatalf("NewBounded(%d): %v", capacity, err)
	}
	im.addSender(tx)
	im.rx = rx
	return im
}

func (chanKind) ops() []op {
	return []op{
		{"Send", chanSend},
		{"Send", chanSend}, // twice as likely as the others
		{"SendWait", chanSendWait},
		{"SendWait", chanSendWait},
		{"TryRecv", chanTryRecv},
		{"Drain", chanDrain},
		{"Drain", chanDrain},
		{"Clone", chanClone},
		{"CloseSender", chanCloseSender},
		{"Close", chanClose},
	}
}

// chanSender is one open or closed Sender, with the number the log names
// it by (txN; never reused, unlike its place in a list).
type chanSender struct {
	n  int
	tx *channel.Sender[int]
}

type chanImpl struct {
	tx           []chanSender // open Senders
	closedTx     []chanSender // closed ones: their calls return ErrClosed
	nextTx       int
	rx           *channel.Receiver[int]
	capacity     int
	pend         chanPending // the values sent and not received
	next         int         // the next value to send
	disconnected bool
	rd           poll.Ready // the Receiver's readiness, as the model knows it
	sends        blockedSends
}

func newChanImpl(capacity int) *chanImpl {
	return &chanImpl{capacity: capacity, sends: newBlockedSends()}
}

func (im *chanImpl) addSender(tx *channel.Sender[int]) chanSender {
	cs := chanSender{n: im.nextTx, tx: tx}
	im.nextTx++
	im.tx = append(im.tx, cs)
	return cs
}

func (im *chanImpl) evented() poll.Evented { return im.rx }
func (im *chanImpl) isFd() bool            { return false }
func (im *chanImpl) filtered(_, _ poll.Ready) bool {
	return false
}

func (im *chanImpl) ready(interest poll.Ready) (sure, maybe poll.Ready) {
	return im.rd & interest, im.rd & interest
}

// room is how many more values a bounded channel takes now.
func (im *chanImpl) room() int { return im.capacity - im.pend.used() }

func (im *chanImpl) String() string {
	c := "unbounded"
	if im.capacity > 0 {
		c = fmt.Sprintf("capacity %d", im.capacity)
	}
	return fmt.Sprintf("channel %s, %d senders, pending %v, %d Sends blocked, disconnected=%v, readiness %s",
		c, len(im.tx), &im.pend, len(im.sends.list), im.disconnected, im.rd)
}

func (im *chanImpl) pickSender(t *rapid.T) (int, chanSender) {
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

// emptied records that the Receiver returned its last value.
func (im *chanImpl) emptied() {
	if len(im.pend.vals) == 0 && !im.disconnected {
		im.rd &^= poll.Readable
	}
}

// chanSend sends in the test goroutine: Send on an unbounded channel,
// TrySend on a bounded one (refused exactly when the model has no room).
func chanSend(t *rapid.T, w *world, s *src) {
	im := s.impl.(*chanImpl)
	_, cs := im.pickSender(t)
	v := im.next
	var err error
	if im.capacity > 0 {
		err = cs.tx.TrySend(v)
		w.logf("%s.tx%d.TrySend(%d) = %v", s.label, cs.n, v, err)
		if im.room() == 0 {
			w.expectErr(t, "TrySend on a full channel", err, channel.ErrFull)
			return
		}
	} else {
		err = cs.tx.Send(v)
		w.logf("%s.tx%d.Send(%d) = %v", s.label, cs.n, v, err)
	}
	w.expectErr(t, fmt.Sprintf("Send with room for %d values", im.room()), err, nil)
	im.next++
	im.pend.push(v)
	im.arrived(w, s)
}

func chanClone(t *rapid.T, w *world, s *src) {
	im := s.impl.(*chanImpl)
	_, cs := im.pickSender(t)
	c, err := cs.tx.Clone()
	w.logf("%s.tx%d.Clone() = tx%d, %v", s.label, cs.n, im.nextTx, err)
	w.expectErr(t, "Clone", err, nil)
	im.addSender(c)
}

// chanCloseSender closes a Sender; the channel is disconnected when the
// last one is closed and no producer's Send is blocked.
func chanCloseSender(t *rapid.T, w *world, s *src) {
	im := s.impl.(*chanImpl)
	i, cs := im.pickSender(t)
	err := cs.tx.Close()
	w.logf("%s.tx%d.Close() = %v", s.label, cs.n, err)
	w.expectErr(t, "Sender.Close", err, nil)
	w.expectErr(t, "second Sender.Close", cs.tx.Close(), channel.ErrClosed)
	w.expectErr(t, "Send after Sender.Close", cs.tx.Send(0), channel.ErrClosed)
	im.tx = slices.Delete(im.tx, i, i+1)
	im.closedTx = append(im.closedTx, cs)
	im.disconnectIfLast(w, s)
}

// disconnectIfLast disconnects the model when no Sender is left: the
// test's are closed and no producer's Send is blocked (a producer closes
// its Sender once its Send returns).
func (im *chanImpl) disconnectIfLast(w *world, s *src) {
	if len(im.tx) == 0 && len(im.sends.list) == 0 && !im.disconnected {
		im.disconnected = true
		im.rd |= poll.Readable | poll.Hup
		w.notify(s, poll.Readable|poll.Hup)
	}
}

// chanClose closes the Receiver: blocked Sends return ErrDisconnected,
// and so does every later Send.
func chanClose(t *rapid.T, w *world, s *src) {
	im := s.impl.(*chanImpl)
	w.closeSource(t, s, "Receiver", im.rx.Close, channel.ErrClosed)
	im.sends.receiverClosed(t, w, s)
	_, err := im.rx.TryRecv()
	w.expectErr(t, "TryRecv after Close", err, channel.ErrClosed)
	if n := im.rx.Len(); n != 0 {
		w.fatalf(t, "Len after Close = %d, want 0", n)
	}
	for v := range im.rx.Drain() {
		w.fatalf(t, "Drain after Close yielded %d", v)
	}
	w.expectErr(t, "Register after Close", w.p.Register(im.rx, w.drawToken(t, "token"), poll.Readable, poll.Level), poll.ErrClosed)
	for _, cs := range im.tx {
		w.expectErr(t, "Send after Receiver.Close", cs.tx.Send(1), channel.ErrDisconnected)
		w.expectErr(t, "TrySend after Receiver.Close", cs.tx.TrySend(1), channel.ErrDisconnected)
		w.expectErr(t, "Sender.Close after Receiver.Close", cs.tx.Close(), nil)
	}
	im.tx = nil
	im.sends.wait()
}

// check compares what can be observed of the channel without changing it
// with the model: Len (every value pending, handed back by a Drain or
// not), every blocked Send asleep and none returned on its own, every
// Sender's Cap, and every closed Sender refusing with ErrClosed.
func (im *chanImpl) check(t *rapid.T, w *world, s *src) {
	if got := im.rx.Len(); got != len(im.pend.vals) {
		w.fatalf(t, "%s.Len() = %d, but the model has %d values pending (%v)", s.label, got, len(im.pend.vals), &im.pend)
	}
	im.sends.asleep(t, w, s, "between steps")
	for _, cs := range im.tx {
		if c := cs.tx.Cap(); c != im.capacity {
			w.fatalf(t, "%s.tx%d.Cap() = %d, want %d", s.label, cs.n, c, im.capacity)
		}
	}
	for _, cs := range im.closedTx {
		w.expectErr(t, fmt.Sprintf("%s.tx%d.TrySend after its Close", s.label, cs.n), cs.tx.TrySend(-1), channel.ErrClosed)
	}
}

func (im *chanImpl) release(t *rapid.T, w *world, s *src) {
	if err := im.rx.Close(); err != nil {
		t.Fatalf("%s: Receiver.Close: %v", s.label, err)
	}
	if s.registered {
		w.deregistered(s, "closed")
	}
	im.sends.receiverClosed(t, w, s)
	for _, cs := range im.tx {
		if err := cs.tx.Close(); err != nil {
			t.Fatalf("%s: Sender.Close: %v", s.label, err)
		}
	}
	im.tx = nil
	im.sends.wait()
}

func (im *chanImpl) discard() {
	_ = im.rx.Close()
	for _, cs := range im.tx {
		_ = cs.tx.Close()
	}
	im.sends.abandon()
}
