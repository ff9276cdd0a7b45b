package poll

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/unipoll/unipoll/sys"
)

// Poll waits for readiness of every source registered with it: descriptors
// through the OS selector, Registrations through the readiness queue, and
// delayed readiness through the timing wheel.
//
// Locking:
//   - pollMu serialises Poll callers and is held for a whole Poll call; the
//     fields marked "consumer" are only touched with it held. Close takes it
//     to wait for a Poll in progress to leave before closing the selector,
//     so the kernel descriptor is never closed under a goroutine using it.
//   - regMu guards the descriptor table. Register, Reregister and
//     Deregister of descriptors take it, and so does Poll while it turns
//     kernel events into user events, which is what makes an event that
//     the kernel produced before Deregister (or Reregister) returned be
//     dropped (or carry the new token) instead of being delivered stale.
//   - Registrations and the queue are lock-free; see readiness_queue.go.
//   - The wheel has its own mutex; see wheel.go.
//
// Lock order: pollMu, then regMu, then a Registration's mu, then the
// wheel's mu.
type Poll struct {
	sel    sys.Selector
	closed atomic.Bool

	pollMu    sync.Mutex
	sysBuf    []sysEvent // consumer
	held      nodeRing   // consumer: linked Registrations it holds (held.go)
	epoch     uint64     // consumer: number of the current Poll call
	userFirst bool       // consumer: which kind of source goes first
	userBusy  bool       // consumer: the last call delivered Registration events
	spinWait  time.Duration

	regMu sync.Mutex
	fds   fdTable

	queue readinessQueue
	wheel wheel
	stats statCounters
}

// New opens a Poll with the default configuration.
func New() (*Poll, error) { return NewWithConfig(Config{}) }

// NewWithConfig opens a Poll with c.
func NewWithConfig(c Config) (*Poll, error) {
	c, err := c.withDefaults()
	if err != nil {
		return nil, err
	}
	sel, err := sys.New(c.Backend)
	if err != nil {
		return nil, err
	}
	p := &Poll{sel: sel, spinWait: c.SpinWait}
	wake := func() { _ = sel.Wake() }
	p.queue.init(wake)
	p.wheel.init(c.WheelTick, c.WheelSlots, wake)
	return p, nil
}

// Backend names the OS mechanism in use: "epoll", "kqueue" or "poll".
func (p *Poll) Backend() string { return p.sel.Name() }

// Register adds e to the Poll under token t, to be reported when it becomes
// ready for any kind in interest, in the trigger mode opts.
//
// A source that is already ready when it is registered is reported by the
// next Poll call.
func (p *Poll) Register(e Evented, t Token, interest Ready, opts PollOpt) error {
	if e == nil {
		return wrapf(ErrInvalidArgument, "Register: nil Evented")
	}
	if _, err := validate(t, interest, opts); err != nil {
		return err
	}
	return e.Register(p, t, interest, opts)
}

// Reregister changes the token, interest and mode of a registered source and
// re-arms a oneshot registration. Every event that a Poll call started after
// Reregister returns reports carries the new token and respects the new
// interest.
func (p *Poll) Reregister(e Evented, t Token, interest Ready, opts PollOpt) error {
	if e == nil {
		return wrapf(ErrInvalidArgument, "Reregister: nil Evented")
	}
	if _, err := validate(t, interest, opts); err != nil {
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
	return e.Deregister(p)
}

// Close releases the Poll. A goroutine blocked in Poll wakes up and returns
// ErrClosed; every later call returns ErrClosed; SetReadiness on
// Registrations bound to this Poll becomes a harmless no-op that returns
// ErrClosed. Registered descriptors are not closed.
func (p *Poll) Close() error {
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
	p.wheel.close()
	p.held.reset()
	return p.sel.Close()
}

// Closed reports whether Close has been called. Sources built on Poll use
// it to let go of a Poll that has been closed, so that they can be
// registered with another one. A nil Poll reports true.
func (p *Poll) Closed() bool { return p == nil || p.closed.Load() }

// Stats returns the Poll's counters. It is safe to call at any time from any
// goroutine, also after Close.
func (p *Poll) Stats() Stats {
	s := &p.stats
	return Stats{
		Polls:        s.polls.Load(),
		Selects:      s.selects.Load(),
		OSEvents:     s.osEvents.Load(),
		UserEvents:   s.userEvents.Load(),
		WakerWrites:  p.sel.WakerWrites(),
		EmptyWakeups: s.emptyWakeups.Load(),
		TimedWakeups: s.timedWakeups.Load(),
		Stale:        s.stale.Load(),
	}
}
