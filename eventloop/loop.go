package eventloop

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"github.com/unipoll/unipoll/channel"
	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/timer"
)

// Loop is a Poll with a dispatcher on top: sources added with Add have
// their own handlers, which Run calls as their events come, in priority
// order, one call at a time per source; functions posted from any
// goroutine run on the loop too.
//
// Add, Rearm, Disarm, Remove, Post, Shutdown and WakePollers are safe from
// any goroutine, also from inside a handler. Run serves the Loop until
// Shutdown, its context ends, or Close.
//
// The zero Loop is not usable: its methods return an error wrapping
// ErrInvalidArgument (Poll returns nil). Make Loops with New.
type Loop struct {
	cfg  Config
	p    *poll.Poll
	tab  table
	lvls levels

	wake    *poll.Registration // Shutdown, removals to finish, WakePollers
	wakeSet *poll.SetReadiness
	postTx  *channel.Sender[func(*Loop)]
	postRx  *channel.Receiver[func(*Loop)]
	tm      *timer.Timer[func(*Loop)] // AfterFunc (afterfunc.go)

	// life orders Add against Close: Add holds it for reading, Close for
	// writing while it marks the Loop closed, so Close's release sees every
	// source added before.
	life   sync.RWMutex
	closed atomic.Bool
	stop   atomic.Bool // Shutdown was called; sticky

	// mu guards the Run state below and, with several workers, the run
	// queue and the workers (workers.go). It also makes its holder the
	// run-queue owner when no Run is active (runq.go).
	mu      sync.Mutex
	active  bool     // a Run is in progress
	closing bool     // Close was called during Run: Run releases on return
	reaps   []*entry // removed entries whose Removed is for Run to call
	reapN   atomic.Int32
	rq      runq
	multi   *workers // several workers: their shared state, during Run

	lastWorkers []*worker // the workers of the current or last Run, for Stats
	once        *worker   // RunOnce's, kept for its buffers

	// Trigger's items, for the run-queue owner to take (trigger.go).
	triggerMu     sync.Mutex
	triggers      []item
	triggersSpare []item
	triggerN      atomic.Int32

	values sync.Map // Value's

	stats stats
}

// errZeroLoop is returned by the methods of a nil or zero Loop.
var errZeroLoop = fmt.Errorf("%w: nil or zero eventloop.Loop (make one with eventloop.New)", ErrInvalidArgument)

// New opens a Loop: its Poll, and the Loop's own three sources on it (a
// Registration that Shutdown and Remove use to wake it, the channel of
// posted functions, and the timer of AfterFunc; see own.go).
func New(c Config) (*Loop, error) {
	c, err := c.withDefaults()
	if err != nil {
		return nil, err
	}
	p, err := poll.NewWithConfig(c.Poll)
	if err != nil {
		return nil, err
	}
	l := &Loop{cfg: c, p: p}
	l.lvls.init()
	l.rq.ls = &l.lvls
	if err := l.addOwnSources(); err != nil {
		return nil, errors.Join(err, l.releaseAll())
	}
	return l, nil
}

// Poll returns the Loop's Poll, for sources the caller registers itself:
// their events go to Run's Handler. Use tokens without bit 63 (see
// IsLoopToken); the Loop's own tokens have it. Do not close the Poll:
// Close does.
func (l *Loop) Poll() *poll.Poll {
	if l == nil {
		return nil
	}
	return l.p
}

// Sources is the number of sources on the Loop that Add put there and
// that have not yet been removed for good (their Removed has not yet
// run), not counting the Loop's own.
func (l *Loop) Sources() int {
	if l == nil || l.p == nil {
		return 0
	}
	return l.tab.count() - ownSources
}

// Workers is the number of goroutines that serve the Loop during Run
// (Config.Workers, 1 by default). With one, every call of every source of
// the Loop is made by that goroutine, one after another, so a handler may
// act on another source's state without a lock; netloop's Relay relies on
// it to write a Conn's input to its peer's socket in one call.
func (l *Loop) Workers() int {
	if l == nil {
		return 0
	}
	return l.cfg.Workers
}

// Shutdown makes Run return once the handlers in progress have returned.
// It is safe from any goroutine, also from a handler, any number of
// times, before, during or after Run. A Loop that has been shut down stays
// so: a later Run returns nil at once.
func (l *Loop) Shutdown() {
	if l == nil || l.p == nil {
		return
	}
	l.stop.Store(true)
	l.wakeUp()
	l.mu.Lock()
	if l.multi != nil {
		l.multi.wakeAllLocked()
	}
	l.mu.Unlock()
}

// Close shuts the Loop down and releases everything it made: every source
// still on it is removed (its handler's Removed runs), then the Loop's own sources and its Poll are
// closed. If a Run is in progress, Close stops it and the release happens
// as Run returns; Close does not wait for that. Closing twice returns an
// error matching ErrClosed.
func (l *Loop) Close() error {
	if l == nil || l.p == nil {
		return errZeroLoop
	}
	l.life.Lock()
	if l.closed.Swap(true) {
		l.life.Unlock()
		return ErrClosed
	}
	l.life.Unlock()
	l.mu.Lock()
	if l.active {
		l.closing = true
		l.mu.Unlock()
		l.Shutdown()
		return nil
	}
	l.mu.Unlock()
	l.Shutdown()
	return l.releaseAll()
}

// releaseAll removes every source the caller added, then closes the Loop's
// own sources and the Poll. No Run is active, and none can start (closed
// is set).
func (l *Loop) releaseAll() error {
	var errs []error
	l.tab.each(func(e *entry) {
		s := e.state.Load()
		if s&fLive == 0 || isOwn(e) {
			return
		}
		if err := l.remove(e, stateGen(s)); err != nil && !errors.Is(err, ErrUnknownToken) {
			errs = append(errs, err)
		}
	})
	errs = append(errs, l.closeOwnSources(), ignoreClosed(l.p.Close()))
	return errors.Join(errs...)
}

// ignoreClosed drops the errors that mean "already gone": closing or
// deregistering something closed, or not registered.
func ignoreClosed(err error) error {
	if err == nil || errors.Is(err, poll.ErrClosed) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, poll.ErrNotRegistered) {
		return nil
	}
	return err
}
