package poll

import (
	"runtime"
	"time"

	"github.com/unipoll/unipoll/internal/base/wheel"
)

// Poll waits until at least one registered source is ready, the timeout
// passes (a negative timeout waits forever, zero does not block), or the
// Poll is closed, and stores the events in ev, replacing its contents. It
// returns the number of events; zero means the timeout passed.
//
// At most one event is reported per token per call, and at most ev.Cap()
// events in all. When more is ready than fits, the rest is reported by the
// following calls, and descriptors and Registrations take turns going first,
// so neither kind can starve the other.
//
// Concurrent callers are serialised: one waits while the other polls.
func (p *Poll) Poll(ev *Events, timeout time.Duration) (int, error) {
	if p == nil || p.sel == nil {
		return 0, errNilPoll
	}
	if ev == nil || cap(ev.buf) == 0 {
		return 0, wrapf(ErrInvalidArgument, "Poll needs an Events from NewEvents")
	}
	p.pollMu.Lock()
	defer p.pollMu.Unlock()
	ev.Clear()
	if p.closed.Load() {
		return 0, ErrClosed
	}
	p.stats.polls.Add(1)
	spin := p.spinNext
	p.spinNext = false
	var start time.Time
	if timeout > 0 {
		start = time.Now()
	}
	left := timeout
	for {
		again, err := p.pollOnce(ev, left, spin)
		spin = false
		if err != nil {
			return 0, err
		}
		if ev.Len() > 0 || timeout == 0 {
			return ev.Len(), nil
		}
		if p.closed.Load() {
			return 0, ErrClosed
		}
		if again {
			// User space has something this pass could not report: most
			// often a producer half-way through linking a node, which
			// will be done in a moment. Let it run rather than sleep.
			runtime.Gosched()
		}
		if timeout > 0 {
			if left = timeout - time.Since(start); left <= 0 {
				return 0, nil
			}
		}
	}
}

// pollOnce makes one pass: due delays, the readiness queue and the selector.
// spin lets it watch the queue for a while before it blocks (spinNext).
//
// The wheel's clock is read at most once per pass that does not block
// (clk): the expiry at the start of the pass and the sleep's timeout share
// the reading, and a pass that slept reads again to expire what came due
// while it slept. A reading lags the clock, so nothing fires early; the
// sleep it times ends late by no more than the work since the reading,
// which is short: the drain of the queue (a spin, which takes longer,
// drops the reading).
//
// It reports again when user space has more than the pass could report:
// the readiness queue was caught mid-link (a producer is half-way through
// linking a node), a held node has something to report, or something
// arrived while it spun. Such a pass does not block in the selector, and
// the caller goes round again.
func (p *Poll) pollOnce(ev *Events, timeout time.Duration, spin bool) (again bool, err error) {
	p.epoch++
	userFirst := p.userFirst
	p.userFirst = !userFirst

	var clk wheel.Reading
	p.wheel.expire(&clk)
	if userFirst {
		again = p.drainQueue(ev)
	}
	var w wakeup
	if !ev.full() {
		looked := false // the spin took descriptor events: one look per pass (rule 1)
		if ev.Len() == 0 && !again && timeout != 0 {
			// About to block: producers must link and wake for every
			// node again, unless a held one has something to report.
			if p.releaseHeld() {
				again = true
			} else if spin {
				if again, err = p.spinForQueue(ev, timeout); err != nil {
					return false, err
				}
				looked = ev.Len() > 0
				clk = wheel.Reading{}
			}
		}
		if !looked {
			if w, err = p.selectInto(ev, timeout, again, &clk); err != nil {
				return false, err
			}
		}
		if w.slept {
			clk = wheel.Reading{}
			p.wheel.expire(&clk)
		}
	}
	if p.drainQueue(ev) {
		again = true
	}
	if w.slept {
		switch {
		case w.timed:
			p.stats.timedWakeups.Add(1)
		case ev.Len() == 0 && w.early:
			p.stats.emptyWakeups.Add(1)
		}
	}
	return again, nil
}

// wakeup describes how a blocking select ended.
type wakeup struct {
	slept bool // the consumer blocked (announced sleep with a non-zero timeout)
	timed bool // it returned by a timeout the wheel had shortened
	early bool // it returned before its timeout (woken, or a kernel event)
}

// selectInto asks the OS selector for as many events as ev has room for,
// blocking only when the pass has found nothing: no event in ev, and not
// again (see pollOnce).
func (p *Poll) selectInto(ev *Events, timeout time.Duration, again bool, clk *wheel.Reading) (w wakeup, err error) {
	if ev.Len() > 0 || again {
		timeout = 0
	}
	shortened := false
	if timeout != 0 {
		timeout, shortened = p.wheel.sleepTimeout(timeout, clk)
		if timeout != 0 && p.queue.prepareSleep() {
			w.slept = true
			if debugChecks && p.held.Len() != 0 {
				corrupted("the consumer blocks holding nodes (invariant 4)")
			}
		} else {
			timeout = 0
			p.wheel.awake()
		}
	}
	if timeout == 0 && p.fds.live.Load() == 0 {
		// No descriptor is registered, so the kernel has no event for
		// this pass, and a look would cost a system call (a third of a
		// hop through two Polls). A Register that returned before this
		// Poll began is counted already. A wake-up written meanwhile
		// stays in the waker for the next Select that blocks, which
		// returns at once and drains it: nothing is lost, and that is
		// the only look that needs it.
		return w, nil
	}
	room := ev.room()
	if cap(p.sysBuf) < room {
		p.sysBuf = make([]sysEvent, room)
	}
	buf := p.sysBuf[:room]
	p.stats.selects.Add(1)
	n, woken, err := p.sel.Select(buf, timeout)
	if w.slept {
		p.queue.finishSleep()
		p.wheel.awake()
	}
	if err != nil {
		return w, err
	}
	w.early = woken || n > 0
	w.timed = w.slept && shortened && !w.early
	if n > 0 {
		if debugChecks {
			if f := afterSelect.Load(); f != nil {
				(*f)(p)
			}
		}
		before := ev.Len()
		p.regMu.Lock()
		for i := range buf[:n] {
			p.deliverFd(buf[i].Key, Ready(buf[i].Ready), ev)
		}
		p.regMu.Unlock()
		if d := ev.Len() - before; d > 0 {
			p.stats.osEvents.Add(uint64(d))
		}
	}
	return w, nil
}

// drainQueue hands newly linked Registrations to the held list and reports
// held nodes into ev until it is full or each has been looked at once in
// this pass. It reports whether the queue was caught mid-link by a push
// that overlaps the drain; one that began earlier, it waits out.
func (p *Poll) drainQueue(ev *Events) (midLink bool) {
	if ev.full() {
		return false
	}
	p.queue.mark()
	if debugChecks {
		if f := afterMark.Load(); f != nil {
			(*f)()
		}
	}
	for {
		n, m := p.queue.pop()
		if n == nil {
			if m && p.queue.behindGoal() {
				// A node linked before this drain began may be behind
				// the half-done link: its producer is between two
				// stores, so let it finish rather than report without
				// that node.
				if debugChecks {
					if f := midLinkWait.Load(); f != nil {
						(*f)()
					}
				}
				runtime.Gosched()
				continue
			}
			midLink = m
			break
		}
		if debugChecks {
			checkHeld(n.state.Load())
		}
		n.idle = 0
		p.held.Push(n)
	}
	before := ev.Len()
	for k := p.held.Len(); k > 0 && !ev.full(); k-- {
		n := p.popHeld()
		if p.visit(n, ev) {
			p.held.Push(n)
		}
	}
	if d := ev.Len() - before; d > 0 {
		p.stats.userEvents.Add(uint64(d))
	}
	return midLink
}

// spinForQueue watches the readiness queue for up to spinWait (never longer
// than timeout) before the consumer commits to blocking, and reports whether
// something arrived. Poll asks for it when the previous call reported
// Registration events (spinNext). A producer that links a node while the consumer spins
// finds it awake and writes no wake-up: under a steady stream of
// SetReadiness this turns one system call per Poll into almost none. It
// yields the processor every few dozen looks, so a producer that shares the
// consumer's processor still runs.
//
// Descriptors are not forgotten meanwhile: with any registered, it also
// looks at the kernel (a Select that does not block, into ev) about once a
// microsecond, or less often where a look itself is slow (poll(2) over many
// descriptors), so that looks take at most a fifth of the spin. Without
// them a socket's data arriving just after a Registration event waited out
// the whole spin, 20µs by default, before it was reported.
func (p *Poll) spinForQueue(ev *Events, timeout time.Duration) (bool, error) {
	budget := p.spinWait
	if budget <= 0 {
		return false, nil
	}
	if timeout > 0 && timeout < budget {
		budget = timeout
	}
	start := time.Now()
	every := spinLookEvery
	var lastLook time.Duration // since start
	for i := 1; ; i++ {
		if p.queue.pending() || p.closed.Load() {
			return true, nil
		}
		// Look at the clock and let other goroutines run only now and
		// then: both cost far more than a look at the queue, and Gosched
		// takes the scheduler's lock, which the producer may need.
		if i%64 == 0 {
			spun := time.Since(start)
			if spun >= budget {
				return false, nil
			}
			if spun-lastLook >= every && p.fds.live.Load() != 0 {
				if _, err := p.selectInto(ev, 0, true, nil); err != nil {
					return false, err
				}
				if ev.Len() > 0 {
					return true, nil
				}
				lastLook = time.Since(start)
				every = max(spinLookEvery, 4*(lastLook-spun))
			}
			runtime.Gosched()
		}
	}
}

// spinLookEvery is how often a spinning consumer looks at the kernel when
// descriptors are registered and a look is quick.
const spinLookEvery = time.Microsecond
