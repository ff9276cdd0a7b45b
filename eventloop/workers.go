package eventloop

import "sync"

// Several workers serve one Loop as leaders and followers. Everything
// below is guarded by Loop.mu, which also guards the run queue while they
// run. At any moment one worker at most is the leader: the one that polls
// next (it is in Poll, or it has been woken to poll). The others run
// handlers, or wait idle on their wake channels, listed in idle.
//
// Invariants:
//
//	W1. A worker waits idle only after finding, under Loop.mu, nothing it
//	    may take from the run queue and a leader present, or after making
//	    sure another worker is on its way (W4). Whoever queues work does
//	    so under Loop.mu and wakes an idle worker if there is one
//	    (wakeHelperLocked); the leader, when its Poll returns, hands the
//	    role to the idle worker that has waited longest (promoteLocked), or
//	    leaves it vacant for the first worker to come by if none is idle.
//	    So queued work never waits while a worker sleeps, and while any
//	    worker sleeps some worker is the leader.
//	W2. The role rotates: a worker that leaves the leader's role does not
//	    take it back while another is designated, and idle workers are
//	    woken first in, first out: the one that has waited longest goes
//	    next, and a worker goes to the back when it waits again, unless it
//	    was woken to help and found nothing to do (that was no turn: it
//	    keeps its place at the front). This is a fair wake-up, first in
//	    first out, as a FIFO wait queue gives: a leader that never has to block (there is always
//	    something ready) would otherwise poll and run everything itself, as
//	    the most recently woken waiter does under the kernel's exclusive
//	    wake-ups (EPOLLEXCLUSIVE).
//	W3. A claim and a release (engine.go) happen under Loop.mu. An event routed for an
//	    entry that is running sets entry.again instead of queueing it; the
//	    release requeues it. So a handler never runs twice at once and no
//	    event that arrives during a call is lost.
//	W4. A worker that has made workerShare calls since it last waited makes
//	    sure another worker is on its way to the run queue and waits at the
//	    back of the queue. Under a load that never lets it run dry it would
//	    otherwise never wait, and on a machine with fewer cores than
//	    workers the worker woken to help might not even get a core until
//	    one that runs blocks.
//	W5. Every send on a worker's wake channel goes with its removal from
//	    idle, and a worker puts itself in idle once before each wait: so a
//	    wake-up is never lost nor left over for a later wait.
type workers struct {
	l      *Loop
	all    []*worker
	idle   []*worker // FIFO: idle[0] waited longest
	leader *worker
	failed error // a Poll error: every worker stops
	polls  int   // Poll calls in this Run; Tick runs before each but the first
	// helping counts workers woken to take queued work that have not yet
	// looked at the run queue: they will take that much of it.
	helping int

	raw sync.Mutex // serialises Run's Handler.Ready and Tick
}

// workerShare is W4's number of calls.
const workerShare = 16

// runWorkers is Run with several workers: the caller's goroutine is
// all[0], the others are started here, and it returns when all have
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
		w.wake <- struct{}{} // W5: never full
	}
	clear(m.idle)
	m.idle = m.idle[:0]
}

// popIdleLocked takes the longest-idle worker out of idle, or nil.
func (m *workers) popIdleLocked() *worker {
	if len(m.idle) == 0 {
		return nil
	}
	w := m.idle[0]
	copy(m.idle, m.idle[1:])
	m.idle[len(m.idle)-1] = nil
	m.idle = m.idle[:len(m.idle)-1]
	return w
}

// promoteLocked hands the leader's role to the longest-idle worker (W1,
// W2), if the role is vacant and a worker is idle.
func (m *workers) promoteLocked() {
	if m.leader != nil {
		return
	}
	if w := m.popIdleLocked(); w != nil {
		m.leader = w
		w.wake <- struct{}{}
	}
}

// wakeHelperLocked wakes the longest-idle worker to take queued work
// (W1), if there is more of it than the caller (taking mine items
// itself) and the helpers already woken will take. Waking a worker for an
// item the caller takes anyway would cost a wake-up for nothing and send
// that worker to the back of the queue, out of turn.
func (m *workers) wakeHelperLocked(mine int) {
	if m.l.rq.n <= mine+m.helping {
		return
	}
	if w := m.popIdleLocked(); w != nil {
		w.helping = true
		m.helping++
		w.wake <- struct{}{}
	}
}

// wakeIdleLocked wakes up to n idle workers, longest idle first, and
// returns how many it woke.
func (m *workers) wakeIdleLocked(n int) int {
	k := 0
	for ; k < n; k++ {
		w := m.popIdleLocked()
		if w == nil {
			break
		}
		w.wake <- struct{}{}
	}
	return k
}

func (m *workers) stoppedLocked(rs *runState) bool {
	return m.failed != nil || m.l.stopping(rs)
}

// serve is one worker's loop.
func (m *workers) serve(w *worker, rs *runState, h Handler) {
	l := m.l
	budget := l.cfg.MaxDispatchPerIteration
	evBudget := l.cfg.MaxEventsPerIteration
	used, evUsed := 0, 0 // since this worker last polled
	streak := 0          // calls since this worker last waited (W4)
	l.mu.Lock()
	for !m.stoppedLocked(rs) {
		spent := used >= budget || evUsed >= evBudget
		switch {
		case m.leader == w:
			w.idleTurn = false
			m.poll(w, h) // on failure m.failed ends the loop
			used, evUsed = 0, 0
		case l.rq.n > 0 && !(spent && m.leader == nil):
			e, gen, r, ok := l.claim()
			if !ok {
				continue
			}
			w.idleTurn = false
			m.wakeHelperLocked(0)
			l.mu.Unlock()
			n, more, event := l.call(w, e, gen, r, max(budget-used, 1))
			used += n
			if event {
				evUsed++
			}
			l.mu.Lock()
			if l.release(w, e, gen, r, more) {
				m.wakeHelperLocked(1)
			}
			if streak++; streak >= workerShare && (m.helping > 0 || len(m.idle) > 0) {
				streak = 0
				m.handOverLocked(w)
			}
		case m.leader == nil:
			m.leader = w
		default:
			streak = 0
			m.waitLocked(w)
		}
	}
	if m.leader == w {
		m.leader = nil
	}
	// Leaving: wake the others, so that they see the end too.
	m.wakeAllLocked()
	l.mu.Unlock()
}

// waitLocked puts w in idle and waits to be woken (W5). A worker goes to
// the back, unless it was woken to help and found nothing to do: that was
// no turn, and it keeps its place at the front (W2).
func (m *workers) waitLocked(w *worker) {
	if w.idleTurn {
		m.idle = append(m.idle, nil)
		copy(m.idle[1:], m.idle)
		m.idle[0] = w
	} else {
		m.idle = append(m.idle, w)
	}
	m.l.mu.Unlock()
	<-w.wake
	m.l.mu.Lock()
	w.idleTurn = w.helping
	if w.helping {
		w.helping = false
		m.helping--
	}
}

// handOverLocked is W4: w makes sure another worker is on its way to the
// run queue (one already woken to help, or the longest-idle one, woken
// now), and waits itself. Waiting frees w's processor, which is what lets
// the woken worker run on a machine with fewer cores than workers.
func (m *workers) handOverLocked(w *worker) {
	if m.leader == w {
		return
	}
	if m.helping == 0 {
		next := m.popIdleLocked()
		if next == nil {
			return // nobody to hand over to: keep going
		}
		next.helping = true
		m.helping++
		next.wake <- struct{}{}
	}
	m.waitLocked(w)
}

// poll is the leader's turn: Tick (but before the first Poll), the Poll
// call, routing its events, handing the role on, and the events for Run's
// Handler. Loop.mu is held on entry and on return. A failed Poll sets
// m.failed, which stops every worker.
func (m *workers) poll(w *worker, h Handler) {
	l := m.l
	if tick, ok := h.(Ticker); ok && m.polls > 0 {
		l.mu.Unlock()
		m.raw.Lock()
		tick.Tick(l)
		m.raw.Unlock()
		l.mu.Lock()
	}
	n, err := l.pollStep(w, -1)
	m.leader = nil
	m.polls++
	if err != nil {
		if m.failed == nil {
			m.failed = err
		}
		return
	}
	raw := l.routeBatch(w, n)
	m.promoteLocked()
	m.wakeHelperLocked(1)
	if raw || l.reapN.Load() != 0 {
		l.mu.Unlock()
		if raw {
			m.dispatchRaw(w, h)
		}
		l.drainReaps()
		l.mu.Lock()
	}
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

// WakePollers wakes the goroutine blocked in the Loop's Poll, as an event
// would, and, with several workers, up to n-1 idle ones besides; each
// woken worker looks for work, and the poller runs Tick before it polls
// again. It returns how many idle workers it woke (the poller aside). It
// is for a caller that changed state the workers look at in Tick. Safe from any goroutine.
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
