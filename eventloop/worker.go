package eventloop

import (
	"errors"

	"github.com/unipoll/unipoll/poll"
)

// worker is one goroutine serving the Loop in Run: its own Events buffer
// (a former poller may still be reading its batch while the next polls),
// and what it needs for its own share of the work.
type worker struct {
	l      *Loop
	id     int
	events *poll.Events
	shared bool          // several workers share the Loop: Loop.mu guards the run queue
	next   []item        // one worker: entries that asked for Again, queued at the next iteration
	wake   chan struct{} // several workers: a send ends this worker's wait
	// helping: woken to take queued work (workers.helping); Loop.mu.
	helping bool
	// idleTurn: woken to help, and nothing done since; Loop.mu.
	idleTurn  bool
	buf       []byte   // read buffer the sources it calls share (ReadBuffer)
	calls     counter  // handler calls made, for Stats
	accounted uint64   // calls already added to Stats.Calls; Loop.mu
	_         [64]byte // keep workers' counters off each other's cache lines
}

func newWorker(l *Loop, id int, shared bool) *worker {
	return &worker{l: l, id: id, shared: shared, events: poll.NewEvents(l.cfg.Events), wake: make(chan struct{}, 1)}
}

// requeue keeps an entry that asked for Again (or posted functions that
// are left) for the next iteration, so that it does not run again before
// the Poll has been asked what else is ready. One worker only.
func (w *worker) requeue(e *entry, gen uint32, r poll.Ready) {
	e.ready |= r
	if e.queued {
		return
	}
	e.queued = true
	w.next = append(w.next, item{e, gen})
}

// flushNext moves the entries requeue kept into the run queue. An entry
// that was freed meanwhile is skipped (its generation moved on).
func (w *worker) flushNext() {
	l := w.l
	for i, it := range w.next {
		w.next[i] = item{}
		if stateGen(it.e.state.Load()) != it.gen {
			continue
		}
		it.e.lvl.push(it)
		l.rq.n++
	}
	w.next = w.next[:0]
}

// ReadBuffer returns the read buffer of the worker that is calling the
// handler of t's source: Config.ReadBuffer bytes that the handlers this
// worker calls share, for input they are done with when their call
// returns (netloop's Conns read into it). Call it only from that handler,
// during its call: once the call returns the buffer is the next call's.
// It returns nil when t's handler is not being called.
func (l *Loop) ReadBuffer(t poll.Token) []byte {
	if l == nil || l.p == nil {
		return nil
	}
	e, gen := l.tab.lookup(t)
	if e == nil || stateGen(e.state.Load()) != gen || e.caller == nil {
		return nil
	}
	w := e.caller
	if w.buf == nil {
		w.buf = make([]byte, l.cfg.ReadBuffer)
	}
	return w.buf
}

func isUnknown(err error) bool { return errors.Is(err, ErrUnknownToken) }
