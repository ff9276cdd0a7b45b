//go:build linux

package proptest

import (
	"bytes"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/channel"
	"github.com/unipoll/unipoll/poll"
)

// Blocking Sends of the channel kind. The SendWait step starts one to
// three producers, each a Clone of a drawn Sender that sends one value
// with Send in a goroutine of its own. With room, a Send returns at once;
// on a full bounded channel it blocks, and the step waits until its
// goroutine is asleep in the channel (its stack shows Sender.waitRoom in
// sync.Cond.Wait), so that the receive that later makes room finds it
// asleep. Several can block at once. A producer's Sender is closed by the
// model once its Send has returned and been checked, not by the producer
// at once: a Close wakes every blocked Send to look at it, which would
// hide a receive that failed to wake them.
//
// After every receive the model works out how many of the blocked Sends
// the room it made lets go on, min(blocked, room), and waits (blockLimit)
// until exactly that many have returned nil, with no further receive:
// one Drain batch that gives back the capacity of several values must
// let several Sends go on at once (channel.go: a sleeper that takes room
// and sees more passes the signal on). Their values then form one group
// of the pending values, in no particular order (model_channel_pending.go).
// Between steps no blocked Send may return; the Receiver's Close makes
// every one of them return ErrDisconnected.
//
// Which of the blocked Sends go on, and in what order their values come
// out, depends on the scheduler, so the log and the failure messages name
// their values only as "a blocked Send's value" (the values themselves go
// to the log's timing notes), and while Sends are blocked a Drain always
// stops in its first batch (a Drain to the end may receive a number of
// their values that depends on the scheduler): every count the model
// reasons with stays the same when rapid runs a case again.

// blockedSend is one producer's Send that has not returned, its
// goroutine's id and its Sender.
type blockedSend struct {
	v  int
	id uint64
	tx *channel.Sender[int]
}

// sendResult is what a producer reports: what its Send returned.
type sendResult struct {
	v   int
	err error
}

type blockedSends struct {
	list    []blockedSend
	results chan sendResult
	quit    chan struct{} // closed by abandon: producers stop reporting
	wg      sync.WaitGroup
	mine    map[int]bool // every value a producer sent (named anonymously)
}

func newBlockedSends() blockedSends {
	return blockedSends{results: make(chan sendResult, 8), quit: make(chan struct{}), mine: map[int]bool{}}
}

// totalsChan counts what the channel kind reached, over the test binary
// (channel_test.go logs it).
var totalsChan struct {
	blocked, bulk, stopped, givenTaken atomic.Int64
}

// show names v for the log and failure messages: a producer's value by
// what it is, since which of them comes out when depends on the scheduler.
func (b *blockedSends) show(v int) string {
	if b.mine[v] {
		return "a blocked Send's value"
	}
	return strconv.Itoa(v)
}

// note gives the values that show named anonymously, for the log's
// timing note (which failure messages leave out).
func (b *blockedSends) note(vals ...int) string {
	for _, v := range vals {
		if b.mine[v] {
			return fmt.Sprintf(" (values %v)", vals)
		}
	}
	return ""
}

// start runs a producer: tx.Send(v), in a goroutine whose id it
// returns.
func (b *blockedSends) start(tx *channel.Sender[int], v int) blockedSend {
	b.mine[v] = true
	id := make(chan uint64, 1)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		id <- goroutineID()
		r := sendResult{v: v, err: tx.Send(v)}
		select {
		case b.results <- r:
		case <-b.quit:
		}
	}()
	return blockedSend{v: v, id: <-id, tx: tx}
}

// await waits up to blockLimit for a producer's report.
func (b *blockedSends) await() (sendResult, bool) {
	select {
	case r := <-b.results:
		return r, true
	case <-time.After(blockLimit):
		return sendResult{}, false
	}
}

// noneReturned fails if a blocked Send has returned: nothing made room.
func (b *blockedSends) noneReturned(t *rapid.T, w *world, s *src, when string) {
	select {
	case r := <-b.results:
		w.log("  %s: Send(%d) returned %v", s.label, r.v, r.err)
		w.fatalf(t, "%s: %s, a blocked Send returned (%v) with no room made for it (%d blocked)", s.label, when, r.err, len(b.list))
	default:
	}
}

// returned checks what a producer reported, r (its Send returned want),
// and takes it off the list. The caller closes its Sender (closeProducers).
func (b *blockedSends) returned(t *rapid.T, w *world, s *src, r sendResult, want error, what string) *channel.Sender[int] {
	i := slices.IndexFunc(b.list, func(s blockedSend) bool { return s.v == r.v })
	if i < 0 {
		w.fatalf(t, "%s: a Send returned that was not blocked", s.label)
	}
	tx := b.list[i].tx
	b.list = slices.Delete(b.list, i, i+1)
	w.expectErr(t, what, r.err, want)
	return tx
}

// closeProducers closes the Senders of producers whose Sends returned,
// once all the Sends expected to return have: a Close wakes every blocked
// Send.
func closeProducers(t *rapid.T, w *world, txs []*channel.Sender[int]) {
	for _, tx := range txs {
		w.expectErr(t, "the Close of a producer's Sender", tx.Close(), nil)
	}
}

// receiverClosed: the Receiver's Close makes every blocked Send return
// ErrDisconnected.
func (b *blockedSends) receiverClosed(t *rapid.T, w *world, s *src) {
	for n := len(b.list); n > 0; n-- {
		r, ok := b.await()
		if !ok {
			w.fatalf(t, "%s: %d blocked Sends still blocked %v after the Receiver's Close", s.label, n, blockLimit)
		}
		closeProducers(t, w, []*channel.Sender[int]{b.returned(t, w, s, r, channel.ErrDisconnected, "blocked Send when the Receiver closes")})
	}
}

// wait waits for the producers' goroutines, which have all reported.
func (b *blockedSends) wait() { b.wg.Wait() }

// abandon lets the producers' goroutines end without reporting (cleanup
// after a failure, the Receiver closed), and waits for them a while.
func (b *blockedSends) abandon() {
	close(b.quit)
	done := make(chan struct{})
	go func() { b.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(blockLimit):
	}
}

// chanSendWait starts a drawn number of producers (see the top of this
// file) at once: as many as there is room for go on, in no particular
// order, and the others block.
func chanSendWait(t *rapid.T, w *world, s *src) {
	im := s.impl.(*chanImpl)
	_, cs := im.pickSender(t)
	n := rapid.IntRange(1, 3).Draw(t, "producers")
	goOn := n
	if im.capacity > 0 {
		goOn = min(n, im.room())
	}
	started := make([]blockedSend, n)
	for i := range started {
		c, err := cs.tx.Clone()
		w.expectErr(t, "Clone for a producer", err, nil)
		started[i] = im.sends.start(c, im.next)
		im.next++
	}
	im.sends.list = append(im.sends.list, started...)
	vals := fmt.Sprint(started[0].v)
	if n > 1 {
		vals += fmt.Sprintf("..%d", started[n-1].v)
	}
	w.logf("%s.tx%d: %d producers Send(%s): %d with room, %d blocked before", s.label, cs.n, n, vals, goOn, len(im.sends.list)-n)
	var landed []int
	var done []*channel.Sender[int]
	for range goOn {
		r, ok := im.sends.await()
		if !ok {
			w.fatalf(t, "%d Sends with room for %d values, and %d returned within %v", n, goOn, len(landed), blockLimit)
		}
		if !slices.ContainsFunc(started, func(b blockedSend) bool { return b.v == r.v }) {
			w.fatalf(t, "a Send returned that had no room (a Send blocked before)")
		}
		done = append(done, im.sends.returned(t, w, s, r, nil, "Send with room"))
		landed = append(landed, r.v)
	}
	closeProducers(t, w, done)
	if len(landed) > 0 {
		im.pend.pushBlocked(landed...)
		im.arrived(w, s)
	}
	totalsChan.blocked.Add(int64(n - goOn))
	im.sends.asleep(t, w, s, "Sends on a full channel")
}

// asleep waits until every blocked Send is asleep in the channel, and
// fails if one returns or is still awake after blockLimit: a Send blocked
// on a full channel sleeps, it does not spin (a Close of another Sender
// wakes them all for a moment to look at it).
func (b *blockedSends) asleep(t *rapid.T, w *world, s *src, what string) {
	if len(b.list) == 0 {
		b.noneReturned(t, w, s, what)
		return
	}
	ids := make([]uint64, len(b.list))
	for i, bs := range b.list {
		ids[i] = bs.id
	}
	deadline := time.Now().Add(blockLimit)
	for !sendsAsleep(ids) {
		b.noneReturned(t, w, s, what)
		if time.Now().After(deadline) {
			w.fatalf(t, "%s: %s, a blocked Send neither returned nor slept within %v", s.label, what, blockLimit)
		}
		runtime.Gosched()
	}
	b.noneReturned(t, w, s, what)
}

// freed waits for the blocked Sends that a receive (what) made room for:
// all of them there is room for must go on, with no further receive.
// edge tells whether their arrival sets Readable as a new edge when the
// model has it clear (the receive cleared it before it gave the room
// back), or only may (it may have seen one of them arrive, and not
// cleared it).
func (im *chanImpl) freed(t *rapid.T, w *world, s *src, what string, edge bool) {
	b := &im.sends
	if len(b.list) == 0 {
		return
	}
	blocked := len(b.list)
	want := min(blocked, im.room())
	var landed []int
	var done []*channel.Sender[int]
	for i := range want {
		r, ok := b.await()
		if !ok {
			w.fatalf(t, "%s made room for %d of the %d blocked Sends, and %d of them returned within %v",
				what, want, blocked, i, blockLimit)
		}
		done = append(done, b.returned(t, w, s, r, nil, "blocked Send when room appears"))
		landed = append(landed, r.v)
	}
	b.noneReturned(t, w, s, fmt.Sprintf("after %s let %d go on", what, want))
	closeProducers(t, w, done)
	slices.Sort(landed)
	w.logTimed(fmt.Sprintf("  %s: %d blocked Sends went on, %d blocked still", s.label, want, len(b.list)),
		fmt.Sprintf(" (values %v)", landed))
	if want >= 2 {
		totalsChan.bulk.Add(1)
	}
	if len(landed) > 0 {
		im.pend.pushBlocked(landed...)
		if im.rd&poll.Readable == 0 {
			im.rd |= poll.Readable
			if edge {
				w.notify(s, poll.Readable)
			} else {
				w.jiggle(s)
			}
		}
	}
	im.disconnectIfLast(w, s)
}

// goroutineID is the calling goroutine's id, as its stack trace shows it.
func goroutineID() uint64 {
	var buf [64]byte
	f := bytes.Fields(buf[:runtime.Stack(buf[:], false)])
	id, _ := strconv.ParseUint(string(f[1]), 10, 64) // "goroutine 123 [running]:"
	return id
}

// stacks is the buffer sendsAsleep reads every goroutine's stack into.
var stacks = make([]byte, 1<<16)

// sendsAsleep reports whether the goroutines ids are all asleep in a Send
// on a full channel: blocked in sync.Cond.Wait, in Sender.waitRoom.
func sendsAsleep(ids []uint64) bool {
	var n int
	for {
		n = runtime.Stack(stacks, true)
		if n < len(stacks) {
			break
		}
		stacks = make([]byte, 2*len(stacks))
	}
	asleep := 0
	for _, g := range bytes.Split(stacks[:n], []byte("\n\n")) {
		// "goroutine 123 [sync.Cond.Wait]:" or "[sync.Cond.Wait, 2 minutes]:"
		f := bytes.Fields(g)
		if len(f) < 3 || !bytes.HasPrefix(f[2], []byte("[sync.Cond.Wait")) || !bytes.Contains(g, []byte(").waitRoom(")) {
			continue
		}
		if id, err := strconv.ParseUint(string(f[1]), 10, 64); err == nil && slices.Contains(ids, id) {
			asleep++
		}
	}
	return asleep == len(ids)
}
