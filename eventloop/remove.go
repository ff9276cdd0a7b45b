package eventloop

import (
	"fmt"

	"github.com/unipoll/unipoll/poll"
)

// Remove takes the source of token t off the Loop: it is deregistered from
// the Poll, and once Remove returns its handler is not called again,
// except that a call already in progress (on another worker, or the
// caller's own) runs to its end. The handler's Removed (see Remover) runs
// once, on the Loop, after that: close the source's descriptor there, not
// before. If no Run is active, Removed runs before Remove returns.
//
// The source is removed even if its deregistration fails; the error is
// returned. Removing a source twice returns an error matching
// ErrUnknownToken.
func (l *Loop) Remove(t poll.Token) error {
	e, gen, err := l.entryOf(t)
	if err != nil {
		return err
	}
	return l.remove(e, gen)
}

// remove deregisters the source, then makes invariant 3's CAS; whoever
// the CAS names runs Removed. The deregistration comes first so that it
// is over before Removed can run (the releaser may run it as soon as the
// CAS is made), and Removed may then close the descriptor.
func (l *Loop) remove(e *entry, gen uint32) error {
	e.mu.Lock()
	if _, ok := e.liveAt(gen); !ok {
		e.mu.Unlock()
		return fmt.Errorf("%w: %#x", ErrUnknownToken, uint64(makeToken(e.idx, gen)))
	}
	var err error
	if !e.deregistered {
		err = ignoreClosed(l.p.Deregister(e.src))
	}
	var s uint64
	for {
		// Only remove clears fLive, and it holds e.mu: the entry is still
		// live here; other bits (fRunning, fDisarmed) may change.
		s = e.state.Load()
		if e.state.CompareAndSwap(s, s&^fLive|fRemoved) {
			break
		}
	}
	e.mu.Unlock()
	if s&fRunning == 0 {
		l.finishSoon(e, gen)
	}
	if err != nil {
		return fmt.Errorf("eventloop: remove %#x: %w", uint64(makeToken(e.idx, gen)), err)
	}
	return nil
}

// finishSoon runs Removed for an entry no call is running for: on the
// loop if a Run is active (the next iteration, which the wake-up starts),
// or here if none is.
func (l *Loop) finishSoon(e *entry, gen uint32) {
	l.mu.Lock()
	if l.active {
		l.reaps = append(l.reaps, e)
		l.reapN.Add(1)
		l.mu.Unlock()
		l.wakeUp()
		return
	}
	h := l.freeLocked(e)
	l.mu.Unlock()
	l.removed(e, h, gen)
}

// finish runs Removed for an entry, on the loop: the releaser of its last
// call, or Run finishing what finishSoon left to it.
func (l *Loop) finish(e *entry, gen uint32) {
	l.mu.Lock()
	h := l.freeLocked(e)
	l.mu.Unlock()
	l.removed(e, h, gen)
}

// drainReaps finishes every entry finishSoon left to Run.
func (l *Loop) drainReaps() {
	for {
		l.mu.Lock()
		if len(l.reaps) == 0 {
			l.mu.Unlock()
			return
		}
		e := l.reaps[len(l.reaps)-1]
		l.reaps[len(l.reaps)-1] = nil
		l.reaps = l.reaps[:len(l.reaps)-1]
		l.reapN.Add(-1)
		gen := stateGen(e.state.Load())
		h := l.freeLocked(e)
		l.mu.Unlock()
		l.removed(e, h, gen)
	}
}

// freeLocked ends an incarnation (invariant 1): the run-queue fields are
// cleared and the generation moves on together, with l.mu held, which
// makes the caller the run-queue owner or excludes the owner (see runq.go).
// It returns the handler, for Removed.
func (l *Loop) freeLocked(e *entry) SourceHandler {
	h := e.h
	gen := stateGen(e.state.Load())
	e.ready, e.queued, e.again = 0, false, false
	e.h, e.src, e.lvl, e.deregistered = nil, nil, nil, false
	e.hint.Store(nil) // the handler is not kept alive by its old entry
	e.state.Store(uint64((gen+1)&uint32(genMask)) << genShift)
	return h
}

// removed calls the handler's Removed and gives the entry back.
func (l *Loop) removed(e *entry, h SourceHandler, gen uint32) {
	if r, ok := h.(Remover); ok {
		r.Removed(l, makeToken(e.idx, gen))
	}
	l.tab.release(e)
}

// discard gives back an entry that never was registered.
func (l *Loop) discard(e *entry) {
	l.mu.Lock()
	_ = l.freeLocked(e)
	l.mu.Unlock()
	l.tab.release(e)
}
