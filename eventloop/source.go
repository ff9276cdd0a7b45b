package eventloop

import (
	"fmt"

	"github.com/unipoll/unipoll/internal/base/prefetch"
	"github.com/unipoll/unipoll/poll"
)

// AddOption configures a source added with Loop.Add.
type AddOption func(*addConfig)

type addConfig struct {
	prio    int
	onToken func(poll.Token)
}

// Priority sets the source's priority (default 0). In each iteration the
// Loop calls the handlers of ready sources highest priority first, and in
// the order their events arrived among equal priorities. With
// Config.MaxEventsPerIteration the order holds across iterations: a source
// that did not get its turn waits, and sources of higher priority that
// become ready meanwhile go before it.
func Priority(p int) AddOption {
	return func(c *addConfig) { c.prio = p }
}

// OnToken calls f with the source's token before the source is registered
// with the Poll, so that no call of its handler can come before f has
// stored the token where the handler, and the goroutines it hands the
// source to, find it (Add returns the token too, but a call may come on
// another worker before Add has returned). f must not call the Loop. If
// Add fails, the token was never the source's.
func OnToken(f func(t poll.Token)) AddOption {
	return func(c *addConfig) { c.onToken = f }
}

// Add registers src with the Loop's Poll for interest in mode opts, under a
// token the Loop chooses, and returns that token. From then on h.Ready is
// called for its events (see SourceHandler and Action).
//
// The token carries a generation: once the source is removed, no event,
// Rearm, Disarm or Remove with its token reaches a later source, also one
// that reuses the same descriptor number.
func (l *Loop) Add(src poll.Evented, interest poll.Ready, opts poll.PollOpt, h SourceHandler, o ...AddOption) (poll.Token, error) {
	if l == nil || l.p == nil {
		return 0, errZeroLoop
	}
	if f, ok := h.(SourceFunc); src == nil || h == nil || ok && f == nil {
		return 0, fmt.Errorf("%w: eventloop: Add needs a source and a handler", ErrInvalidArgument)
	}
	var c addConfig
	for _, f := range o {
		if f != nil {
			f(&c)
		}
	}
	return l.add(src, interest, opts, h, nil, c)
}

// add puts a source on the Loop: a caller's (h) or one of the Loop's own
// (own). c.onToken, if not nil, learns the token before the incarnation
// is published (invariant 5), so that what it stores is visible to every
// call.
func (l *Loop) add(src poll.Evented, interest poll.Ready, opts poll.PollOpt, h SourceHandler, own ownSource, c addConfig) (poll.Token, error) {
	l.life.RLock()
	defer l.life.RUnlock()
	if l.closed.Load() {
		return 0, ErrClosed
	}
	e, err := l.tab.alloc()
	if err != nil {
		return 0, err
	}
	lvl := l.lvls.get(c.prio)
	e.mu.Lock()
	gen := stateGen(e.state.Load())
	e.h, e.src, e.interest, e.opts, e.oneshot, e.lvl = h, src, interest, opts, opts.IsOneshot(), lvl
	if hh, ok := h.(prefetch.Hinter); ok {
		e.hint.Store(&hintRef{hh})
	}
	if own != nil {
		e.own = own // the first entries of a new table, never freed (own.go)
	}
	tok := makeToken(e.idx, gen)
	if c.onToken != nil {
		c.onToken(tok)
	}
	e.state.Store(uint64(gen)<<genShift | fLive) // publishes the fields (invariant 5)
	if err := l.p.Register(src, tok, interest, opts); err != nil {
		// Never registered: no event, call or Removed for it.
		e.state.Store(uint64(gen)<<genShift | fRemoved)
		e.mu.Unlock()
		l.discard(e)
		return 0, err
	}
	e.mu.Unlock()
	return tok, nil
}

func unknownToken(t poll.Token) error { return fmt.Errorf("%w: %#x", ErrUnknownToken, uint64(t)) }

// entryOf returns the entry tok names and its generation, if it is live.
func (l *Loop) entryOf(tok poll.Token) (*entry, uint32, error) {
	if l == nil || l.p == nil {
		return nil, 0, errZeroLoop
	}
	e, gen := l.tab.lookup(tok)
	if e == nil || isOwn(e) {
		return nil, 0, fmt.Errorf("%w: %#x", ErrUnknownToken, uint64(tok))
	}
	return e, gen, nil
}

// Rearm re-enables the source of token t after Disarm, or a Oneshot source
// after its event, by reregistering it with its interest and mode: a source
// that is ready now is reported at once (the poll contract's rule 5).
func (l *Loop) Rearm(t poll.Token) error {
	e, gen, err := l.entryOf(t)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return l.rearmLocked(e, gen)
}

// rearmLocked clears fDisarmed, then registers the source again (if
// Disarm deregistered it) or reregisters it: in that order, an event that
// the registration produces cannot find the entry still disarmed and be
// dropped. Either way a source that is ready now is reported (rule 5).
func (l *Loop) rearmLocked(e *entry, gen uint32) error {
	if _, ok := e.liveAt(gen); !ok {
		return unknownToken(makeToken(e.idx, gen))
	}
	e.state.And(^fDisarmed)
	tok := makeToken(e.idx, gen)
	if e.deregistered {
		if err := l.p.Register(e.src, tok, e.interest, e.opts); err != nil {
			return err
		}
		e.deregistered = false
		return nil
	}
	return l.p.Reregister(e.src, tok, e.interest, e.opts)
}

// SetInterest changes the interest the source of token t is registered
// with (Add's interest), from any goroutine, also from its handler: a
// Conn of package netloop asks for Writable only while output waits. A
// disarmed source keeps its registration off, and Rearm registers it with
// the new interest.
func (l *Loop) SetInterest(t poll.Token, interest poll.Ready) error {
	e, gen, err := l.entryOf(t)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.liveAt(gen)
	if !ok {
		return unknownToken(makeToken(e.idx, gen))
	}
	e.interest = interest
	if s&fDisarmed != 0 {
		return nil // Rearm registers the new interest
	}
	return l.p.Reregister(e.src, makeToken(e.idx, gen), interest, e.opts)
}

// SetMode changes both the interest and the mode the source of token t is
// registered with, from any goroutine, also from its handler: Edge to
// Level and back (netloop's Relay reads a socket under Level, so that the
// Poll, not a read that finds nothing, says it holds more). Oneshot is
// the Loop's to manage (Disarm, Rearm), so a change to or from it returns
// an error wrapping ErrInvalidArgument.
//
// Events the Poll reported before the change may still bring calls after
// SetMode returns, as with Reregister: with several workers, one may hold
// such an event in its batch while the others poll.
func (l *Loop) SetMode(t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	e, gen, err := l.entryOf(t)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.liveAt(gen)
	if !ok {
		return unknownToken(makeToken(e.idx, gen))
	}
	if (opts|e.opts)&poll.Oneshot != 0 {
		return fmt.Errorf("%w: SetMode to or from Oneshot (%v -> %v)", ErrInvalidArgument, e.opts, opts)
	}
	e.interest, e.opts = interest, opts
	if s&fDisarmed != 0 {
		return nil // Rearm registers the new interest and mode
	}
	return l.p.Reregister(e.src, makeToken(e.idx, gen), interest, opts)
}

// Disarm stops calls for the source of token t until Rearm. Events that
// were already on their way are dropped; readiness that arrives
// meanwhile is reported when Rearm re-enables the source. Disarming a
// disarmed source does nothing.
func (l *Loop) Disarm(t poll.Token) error {
	e, gen, err := l.entryOf(t)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return l.disarmLocked(e, gen, true)
}

// disarmLocked sets fDisarmed and, if the Poll may still report the
// source, deregisters it (invariant 4): a Poll cannot watch a source for
// nothing, and a deregistered source costs no wake-up at all; Rearm
// registers it again.
func (l *Loop) disarmLocked(e *entry, gen uint32, deregister bool) error {
	s, ok := e.liveAt(gen)
	if !ok {
		return unknownToken(makeToken(e.idx, gen))
	}
	if s&fDisarmed != 0 {
		return nil
	}
	e.state.Or(fDisarmed)
	if !deregister || e.deregistered {
		return nil
	}
	if err := l.p.Deregister(e.src); err != nil {
		return err
	}
	e.deregistered = true
	return nil
}
