package poll

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/unipoll/unipoll/internal/base/ring"
	"github.com/unipoll/unipoll/sys"
)

// Poll waits for readiness of every source registered with it: descriptors
// through the OS selector, Registrations through the readiness queue, and
// delayed readiness through the timing wheel.
//
// Make one with New or NewWithConfig; the zero Poll is not usable, and
// every method with an error result returns an error matching
// ErrInvalidArgument for it (and for a nil *Poll). All methods may be
// called from any goroutine; see the package documentation.
type Poll struct {
	// Locking (not for users; ARCHITECTURE.md has the whole picture):
	//   - pollMu serialises Poll callers and is held for a whole Poll call;
	//     the fields marked "consumer" are only touched with it held. Close
	//     takes it to wait for a Poll in progress to leave before closing
	//     the selector, so the kernel descriptor is never closed under a
	//     goroutine using it.
	//   - regMu guards the descriptor table. Register, Reregister and
	//     Deregister of descriptors take it, and so does Poll while it turns
	//     kernel events into user events, which is what makes an event that
	//     the kernel produced before Deregister or Reregister returned be
	//     dropped instead of being delivered stale (both change the key's
	//     generation; after Reregister the kernel reports afresh).
	//   - Registrations and the queue are lock-free (readiness_queue.go).
	//   - The wheel has its own mutex (internal/base/wheel).
	//   - tokens has its own mutex, a leaf (shared_tokens.go).
	// Lock order: pollMu, then regMu, then a Registration's mu, then the
	// wheel's mu or tokens' mu.
	sel        sys.Selector
	nativeEdge bool // sel.Traits().NativeEdge, read on every Fd.Drained
	closed     atomic.Bool

	pollMu    sync.Mutex
	sysBuf    []sysEvent          // consumer
	held      ring.Ring[*regNode] // consumer: linked Registrations it holds (held.go)
	epoch     uint64              // consumer: number of the current pass
	userFirst bool                // consumer: which kind of source goes first
	spinNext  bool                // consumer: the last call reported Registration events, so the next spins before it blocks
	spinWait  time.Duration

	regMu sync.Mutex
	fds   fdTable

	tokens tokenTable // each source's Token, in a unipoll_debug build (shared_tokens.go); empty otherwise
	queue  readinessQueue
	wheel  pollWheel
	stats  statCounters
}

// errNilPoll is the answer of every method of a nil or zero Poll.
var errNilPoll = wrapf(ErrInvalidArgument, "nil or zero Poll (make one with poll.New)")

// check reports whether p can be used: not nil, not the zero Poll, and not
// closed.
func (p *Poll) check() error {
	if p == nil || p.sel == nil {
		return errNilPoll
	}
	if p.closed.Load() {
		return ErrClosed
	}
	return nil
}

// New opens a Poll with the default configuration.
func New() (*Poll, error) { return NewWithConfig(Config{}) }

// NewWithConfig opens a Poll with c.
func NewWithConfig(c Config) (*Poll, error) {
	c, err := c.withDefaults()
	if err != nil {
		return nil, err
	}
	sel, err := sys.NewWithOptions(c.Backend, sys.Options{Wait: c.Wait, Completion: c.Completion})
	if err != nil {
		return nil, err
	}
	p := &Poll{sel: sel, nativeEdge: sel.Traits().NativeEdge, spinWait: c.SpinWait}
	wake := func() { _ = sel.Wake() }
	p.queue.init(wake)
	p.wheel.init(c.WheelTick, c.WheelSlots, wake)
	return p, nil
}

// Backend names the OS mechanism in use: "epoll", "kqueue" or "poll" ("" for
// a nil or zero Poll).
func (p *Poll) Backend() string {
	if p == nil || p.sel == nil {
		return ""
	}
	return p.sel.Name()
}

// edgeEmulated reports whether this Poll's backend emulates edge
// triggering for descriptors (poll(2)) instead of the kernel doing it
// (epoll, kqueue). Code that follows the rule given under Edge works the
// same either way; this is for tests.
func (p *Poll) edgeEmulated() bool { return p != nil && p.sel != nil && !p.nativeEdge }

// Register adds e to the Poll under token t, to be reported when it becomes
// ready for any kind in interest, in the trigger mode opts.
//
// A source that is already ready when it is registered is reported by the
// next Poll call.
//
// Two sources may be registered under one Token (see Token): their events
// then cannot be told apart. A build with the unipoll_debug tag counts
// such registrations in Stats.SharedTokens.
func (p *Poll) Register(e Evented, t Token, interest Ready, opts PollOpt) error {
	if e == nil {
		return wrapf(ErrInvalidArgument, "Register: nil Evented")
	}
	if err := p.check(); err != nil {
		return err
	}
	return e.Register(p, t, interest, opts)
}

// Reregister changes the token, interest and mode of a registered source and
// re-arms a oneshot registration. Every event that a Poll call started after
// Reregister returns reports carries the new token and respects the new
// interest. If Reregister returns an error, the registration is left as it
// was.
func (p *Poll) Reregister(e Evented, t Token, interest Ready, opts PollOpt) error {
	if e == nil {
		return wrapf(ErrInvalidArgument, "Reregister: nil Evented")
	}
	if err := p.check(); err != nil {
		return err
	}
	return e.Reregister(p, t, interest, opts)
}

// Deregister removes e from the Poll. Pending notifications are discarded: a
// Poll call started after Deregister returns never reports e.
func (p *Poll) Deregister(e Evented) error {
	if e == nil {
		return wrapf(ErrInvalidArgument, "Deregister: nil Evented")
	}
	if err := p.check(); err != nil {
		return err
	}
	return e.Deregister(p)
}

// Close releases the Poll. A goroutine blocked in Poll wakes up and returns
// ErrClosed; every later call returns ErrClosed; SetReadiness on
// Registrations bound to this Poll becomes a harmless no-op that returns
// ErrClosed. Registered descriptors are not closed, and they are free to be
// registered with another Poll. On the "uring" backend Close takes about
// 20 ms, the time the kernel needs to tear the ring down (see
// sys.BackendUring); the other backends return at once.
func (p *Poll) Close() error {
	if p == nil || p.sel == nil {
		return errNilPoll
	}
	if p.closed.Swap(true) {
		return ErrClosed
	}
	p.queue.close()
	_ = p.sel.Wake()
	p.pollMu.Lock() // wait for a Poll in progress to notice and leave
	defer p.pollMu.Unlock()
	p.regMu.Lock()
	defer p.regMu.Unlock()
	p.fds.reset()
	if debugChecks {
		p.tokens.reset()
	}
	p.wheel.close()
	p.held.Reset()
	return p.sel.Close()
}

// Closed reports whether Close has been called. Sources built on Poll use
// it to let go of a Poll that has been closed, so that they can be
// registered with another one. A nil or zero Poll reports true.
func (p *Poll) Closed() bool { return p == nil || p.sel == nil || p.closed.Load() }

// Stats returns the Poll's counters. It is safe to call at any time from any
// goroutine, also after Close; a nil or zero Poll has none.
func (p *Poll) Stats() Stats {
	if p == nil || p.sel == nil {
		return Stats{}
	}
	s := &p.stats
	c := p.sel.Counters()
	fired, cancelled := p.wheel.Totals()
	return Stats{
		Polls:           s.polls.Load(),
		Selects:         s.selects.Load(),
		OSEvents:        s.osEvents.Load(),
		UserEvents:      s.userEvents.Load(),
		KernelWaits:     c.Waits,
		TimersPending:   uint64(p.wheel.Pending()),
		TimersFired:     fired,
		TimersCancelled: cancelled,
		WakerWrites:     c.WakerWrites,
		EmptyWakeups:    s.emptyWakeups.Load(),
		TimedWakeups:    s.timedWakeups.Load(),
		Stale:           s.stale.Load(),
		SharedTokens:    s.sharedTokens.Load(),
	}
}
