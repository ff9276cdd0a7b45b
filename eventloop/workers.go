package eventloop

import (
	"fmt"
	"sync"
	"time"

	"github.com/unipoll/unipoll/poll"
)

// Several workers serve one Loop as leaders and followers. Everything
// below is guarded by Loop.mu, which also guards the run queue while they
// run. Each worker is, at any moment, in one of three states:
//
//   - the poller (at most one): in Poll, without Loop.mu;
//   - running: calling a handler it has claimed, without Loop.mu;
//   - idle: waiting on its wake channel, listed in idle.
//
// Invariants:
//
//	W1. A worker goes idle only after finding, under Loop.mu, the run queue
//	    empty (or its budget spent with a poller present) and a poller
//	    present. Whoever adds work or leaves the poller's role does so
//	    under Loop.mu and then calls promoteLocked, which wakes the idle
//	    worker that has waited longest if there is queued work or no
//	    poller. So queued work never waits while a worker sleeps, and
//	    while any worker is idle someone polls.
//	W2. Idle workers are woken first in, first out: the one that has waited
//	    longest goes next, and a woken worker goes to the back when it
//	    waits again. No worker takes all the load, as a LIFO or the
//	    kernel's exclusive wake-ups (EPOLLEXCLUSIVE) would let the most
//	    recent one do.
//	W3. A claim and a release happen under Loop.mu. An event routed for an
//	    entry that is running sets entry.again instead of queueing it; the
//	    release requeues it. So a handler never runs twice at once and no
//	    event that arrives during a call is lost.
//	W4. The poller leaves its role (poller = nil) under Loop.mu before it
//	    routes its batch, and promotes a follower before it runs handlers
//	    itself, so the Poll is not left unattended while it works.
type workers struct {
	l      *Loop
	all    []*worker
	idle   []*worker // FIFO: idle[0] waited longest
	poller *worker
	failed error // a Poll error: every worker stops
	polls  int   // Poll calls in this Run; Tick runs before each but the first

	raw sync.Mutex // serialises Run's Handler.Ready and Tick
}

// runWorkers is Run with several workers: the caller's goroutine is
// ws[0], the others are started here, and it returns when all have
// stopped.
func (l *Loop) runWorkers(rs *runState, h Handler, all []*worker) error {
	m := &workers{l: l, all: all}
	l.mu.Lock()
	l.multi = m
	l.mu.Unlock()
	var wg sync.WaitGroup
	for _, w := range all[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.serve(w, rs, h)
		}()
	}
	m.serve(all[0], rs, h)
	wg.Wait()
	l.mu.Lock()
	l.multi = nil
	err := m.failed
	l.mu.Unlock()
	return err
}

// wakeAllLocked wakes every idle worker (Shutdown, a failure).
func (m *workers) wakeAllLocked() {
	for _, w := range m.idle {
		wakeWorker(w)
	}
	m.idle = m.idle[:0]
}

func wakeWorker(w *worker) {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// promoteLocked is W1: wake the longest-idle worker if there is queued
// work or nobody polls.
func (m *workers) promoteLocked() {
	if len(m.idle) == 0 || (m.l.rq.n == 0 && m.poller != nil) {
		return
	}
	w := m.idle[0]
	copy(m.idle, m.idle[1:])
	m.idle[len(m.idle)-1] = nil
	m.idle = m.idle[:len(m.idle)-1]
	wakeWorker(w)
}

// wakeIdleLocked wakes up to n idle workers, longest idle first, and
// returns how many it woke.
func (m *workers) wakeIdleLocked(n int) int {
	k := min(n, len(m.idle))
	for _, w := range m.idle[:k] {
		wakeWorker(w)
	}
	rest := copy(m.idle, m.idle[k:])
	clear(m.idle[rest:])
	m.idle = m.idle[:rest]
	return k
}

func (m *workers) stoppedLocked(rs *runState) bool {
	return m.failed != nil || m.l.stopping(rs)
}

// serve is one worker's loop.
func (m *workers) serve(w *worker, rs *runState, h Handler) {
	l := m.l
	tick, _ := h.(Ticker)
	budget := l.cfg.MaxDispatchPerIteration
	evBudget := l.cfg.MaxEventsPerIteration
	used, evUsed := 0, 0 // since this worker last polled
	l.mu.Lock()
	for !m.stoppedLocked(rs) {
		spent := used >= budget || evUsed >= evBudget
		if l.rq.n > 0 && !(spent && m.poller == nil) {
			it := l.rq.pop()
			e := it.e
			s := e.state.Load()
			if stateGen(s) != it.gen {
				l.stats.stale.Add(1)
				continue // an item of an earlier incarnation (invariant 1)
			}
			e.queued = false
			if s&fRunning != 0 && stateGen(s) == it.gen {
				e.again = true // W3: it runs now; its release requeues it
				continue
			}
			r := e.ready
			e.ready = 0
			if !claimable(s, it.gen) || !e.state.CompareAndSwap(s, s|fRunning) {
				l.stats.dropped.Add(1)
				continue
			}
			m.promoteLocked()
			l.mu.Unlock()
			n, more := l.call(w, e, it.gen, r, max(budget-used, 1))
			used += n
			if e.kind == kindUser {
				evUsed++
			}
			l.mu.Lock()
			m.releaseLocked(e, it.gen, r, more)
			continue
		}
		if m.poller == nil {
			if m.polls > 0 && tick != nil {
				l.mu.Unlock()
				m.raw.Lock()
				tick.Tick(l)
				m.raw.Unlock()
				l.mu.Lock()
				if m.stoppedLocked(rs) || m.poller != nil {
					continue
				}
			}
			m.poller = w
			timeout := time.Duration(-1)
			if l.rq.n > 0 {
				timeout = 0
			}
			l.mu.Unlock()
			n, err := l.p.Poll(w.events, timeout)
			l.mu.Lock()
			m.poller = nil // W4
			m.polls++
			used, evUsed = 0, 0
			if err != nil {
				if m.failed == nil {
					m.failed = fmt.Errorf("eventloop: poll: %w", err)
				}
				m.wakeAllLocked()
				break
			}
			l.stats.iterations.Add(1)
			raw := m.routeLocked(w, n)
			m.promoteLocked()
			if raw || l.reapN.Load() != 0 {
				l.mu.Unlock()
				if raw {
					m.dispatchRaw(w, h)
				}
				l.drainReaps()
				l.mu.Lock()
			}
			continue
		}
		m.idle = append(m.idle, w)
		l.mu.Unlock()
		<-w.wake
		l.mu.Lock()
	}
	// Leaving: another worker may be idle waiting for work this one
	// would have promoted it for.
	m.wakeAllLocked()
	l.mu.Unlock()
}

// routeLocked queues the entries a batch names (W3 for those running). It
// reports whether the batch has events for Run's Handler.
func (m *workers) routeLocked(w *worker, n int) (raw bool) {
	l := m.l
	for i := range n {
		ev := w.events.At(i)
		if !IsLoopToken(ev.Token) {
			raw = true
			continue
		}
		e, gen := l.tab.lookup(ev.Token)
		if e == nil {
			l.stats.stale.Add(1)
			continue
		}
		s, ok := e.liveAt(gen)
		if !ok {
			l.stats.stale.Add(1)
			continue
		}
		if s&fRunning != 0 {
			e.ready |= ev.Ready
			e.again = true
			continue
		}
		l.rq.enqueue(e, gen, ev.Ready)
	}
	return raw
}

// dispatchRaw gives the batch's events for sources registered on Poll
// directly to Run's Handler, one worker at a time.
func (m *workers) dispatchRaw(w *worker, h Handler) {
	if h == nil {
		return
	}
	m.raw.Lock()
	defer m.raw.Unlock()
	for i := range w.events.Len() {
		if ev := w.events.At(i); !IsLoopToken(ev.Token) {
			h.Ready(m.l, ev)
		}
	}
}

// releaseLocked ends a call (W3): the entry is queued again if it asked
// for it or an event came meanwhile, and finished if it was removed.
func (m *workers) releaseLocked(e *entry, gen uint32, r poll.Ready, more bool) {
	l := m.l
	again := e.again
	e.again = false
	if e.release() {
		h := l.freeLocked(e)
		l.mu.Unlock()
		l.removed(e, h, gen)
		l.mu.Lock()
		return
	}
	if more {
		l.rq.enqueue(e, gen, r)
	} else if again {
		l.rq.enqueue(e, gen, 0)
	}
	if more || again {
		m.promoteLocked()
	}
}

// WakePollers wakes the goroutine blocked in the Loop's Poll, as an event
// would, and, with several workers, up to n-1 idle ones besides; each
// woken worker looks for work, and the poller runs Tick before it polls
// again. It returns how many idle workers it woke (the poller aside). It
// is the AEN notes' wake_pollers: for a caller that changed state the
// workers look at in Tick. Safe from any goroutine.
func (l *Loop) WakePollers(n int) int {
	if l == nil || l.p == nil || n <= 0 {
		return 0
	}
	l.wakeUp()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.multi == nil {
		return 0
	}
	return l.multi.wakeIdleLocked(n - 1)
}
