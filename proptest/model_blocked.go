//go:build linux

package proptest

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
)

// The ChangeBlocked step: while this goroutine blocks in Poll(-1), another
// goroutine makes a quiet source reportable by a registration change alone
// (rule 5): Register of a ready source, or Reregister that widens the
// interest to readiness it has, re-arms a disarmed oneshot source that is
// still ready, or reregisters an edge-triggered source reported and still
// ready. The change must wake the blocked Poll (rule 8) at once: the other
// goroutine watches this one's thread with the probe of probe.go and
// closes the Poll, failing the step, if it stays asleep in the selector
// for stallFast after the change returned (the Poll's own watchdog,
// blockLimit, is the slower backstop).
//
// In the model the change happens during the call, so the source may be
// reported in it; when no other source could end the call, it is what
// ended it and must be reported in it (if the buffer has room).

// during is work that another goroutine does while a Poll call runs.
type during interface {
	// start begins it, just before the Poll call.
	start(p *poll.Poll)
	// returned is called as soon as the Poll call has returned.
	returned()
	// join waits for it to end and applies it to the model, before the
	// call is checked; it fails the check if the work failed.
	join(t *rapid.T, w *world)
}

// allInterest is every readiness kind.
const allInterest = poll.Readable | poll.Writable | poll.Error | poll.Hup | poll.Priority

// bitsOf lists the readiness kinds in r.
func bitsOf(r poll.Ready) []poll.Ready {
	var out []poll.Ready
	for b := poll.Readable; b <= poll.Priority; b <<= 1 {
		if r&b != 0 {
			out = append(out, b)
		}
	}
	return out
}

// reportable reports whether the model allows a Poll call to report s now
// (before any change in the call).
func (w *world) reportable(s *src) bool {
	if !s.armedNow() {
		return false
	}
	sure, maybe := s.impl.ready(s.interest)
	return (sure|maybe) != 0 && (s.opts.IsLevel() || s.owed || s.mayFire)
}

// quietBefore reports whether nothing but a change could end a blocking
// Poll now: no source may be reported, and nothing waits for time.
func (w *world) quietBefore(except *src) bool {
	for _, s := range w.live() {
		if s == except {
			continue
		}
		if w.reportable(s) || time.Now().Before(s.graceUntil) {
			return false
		}
		if tm, ok := s.impl.(timed); ok {
			if _, _, ok := tm.pending(s); ok {
				return false
			}
		}
	}
	return !w.crowd.reportable()
}

// ChangeBlocked runs a registration change on another goroutine during a
// Poll(-1) that would otherwise block.
func (w *world) ChangeBlocked(t *rapid.T) {
	if w.closed || w.mustReturn() {
		t.Skip("Poll(-1) would not block")
	}
	var cands []*src
	for _, s := range w.live() {
		if w.reportable(s) || time.Now().Before(s.graceUntil) {
			continue
		}
		if tm, ok := s.impl.(timed); ok {
			if _, _, ok := tm.pending(s); ok {
				continue
			}
		}
		if sure, _ := s.impl.ready(allInterest); sure != 0 {
			cands = append(cands, s)
		}
	}
	if len(cands) == 0 {
		t.Skip("no quiet source is ready")
	}
	s := cands[rapid.IntRange(0, len(cands)-1).Draw(t, "source (index among quiet ready ones)")]
	all, _ := s.impl.ready(allInterest)
	interest := drawInterest(t) | rapid.SampledFrom(bitsOf(all)).Draw(t, "ready bit in the new interest")
	if sure, _ := s.impl.ready(interest); sure == 0 {
		t.Skip("the new interest holds nothing surely ready")
	}
	c := &blockedChange{s: s, interest: interest, opts: drawOpts(t), register: !s.registered, tok: s.token, done: make(chan struct{})}
	if c.register || rapid.Bool().Draw(t, "new token") {
		c.tok = w.drawToken(t, "token")
	}
	c.atOnce = rapid.IntRange(0, 3).Draw(t, "when (0: at once, else once the poller sleeps)") == 0
	capacity := rapid.IntRange(1, 8).Draw(t, "capacity")
	c.must = w.quietBefore(s)

	runtime.LockOSThread() // for the probe: this goroutine's thread is the poller's
	defer runtime.UnlockOSThread()
	c.probe = probeThisThread()
	c.kick = w.kick
	w.pollDuring(t, capacity, -1, c)
}

// blockedChange is the other goroutine's work in ChangeBlocked.
type blockedChange struct {
	s        *src
	tok      poll.Token
	interest poll.Ready
	opts     poll.PollOpt
	register bool // Register (else Reregister)
	atOnce   bool // change without waiting for the poller to sleep
	must     bool // nothing else could end the call
	probe    *threadProbe
	kick     *kicker

	ret     atomic.Bool // the Poll call returned
	done    chan struct{}
	slept   bool   // the poller was seen asleep before the change
	err     error  // of the change
	stalled string // why the Poll was closed, if it was
}

func (c *blockedChange) what() string {
	if c.register {
		return "Register"
	}
	return "Reregister"
}

func (c *blockedChange) start(p *poll.Poll) {
	go func() {
		defer close(c.done)
		if !c.atOnce {
			c.slept = c.probe.waitAsleep(blockLimit, &c.ret)
		}
		e := c.s.impl.evented()
		if c.register {
			c.err = p.Register(e, c.tok, c.interest, c.opts)
		} else {
			c.err = p.Reregister(e, c.tok, c.interest, c.opts)
		}
		if c.err != nil || !c.must {
			return
		}
		// Only this change can end the call: it must wake the poller.
		changed := time.Now()
		var asleepSince time.Time
		for !c.ret.Load() {
			now := time.Now()
			if c.probe.asleep() {
				if asleepSince.IsZero() {
					asleepSince = now
				}
				if now.Sub(asleepSince) >= stallFast {
					c.stalled = fmt.Sprintf("the poller's thread stayed asleep in the selector for %v after it returned", stallFast)
					c.kick.kick() // in case the bug broke the wake-up that Close needs
					_ = p.Close()
					return
				}
			} else {
				asleepSince = time.Time{}
			}
			if now.Sub(changed) > blockLimit {
				return // the Poll's watchdog closes it
			}
			pace(probePeriod)
		}
	}()
}

func (c *blockedChange) returned() { c.ret.Store(true) }

func (c *blockedChange) join(t *rapid.T, w *world) {
	<-c.done
	s := c.s
	note := "at once"
	if !c.atOnce {
		note = "once the poller slept"
		if !c.slept {
			note = "the poller was not seen asleep"
		}
	}
	w.logTimed(fmt.Sprintf("during Poll#%d, from another goroutine: %s(%s, token %d, %s, %s) = %v", w.calls+1, c.what(), s.label, c.tok, c.interest, c.opts, c.err),
		" ("+note+")")
	if c.stalled != "" {
		w.closed = true
		w.fatalf(t, "%s(%s, token %d, %s, %s) of a ready source, from another goroutine while Poll(-1) blocked with nothing else to report, did not wake it: %s (rules 5, 8)",
			c.what(), s.label, c.tok, c.interest, c.opts, c.stalled)
	}
	w.expectErr(t, c.what()+" from another goroutine", c.err, nil)
	if !c.register && c.tok != s.token {
		w.retire(s, fmt.Sprintf("reregistered as token %d", c.tok))
	}
	w.arm(s, c.tok, c.interest, c.opts)
	s.changedNow = changeMay
	if c.must {
		s.changedNow = changeMust
	}
}

// Values of src.changedNow: the registration changed during the call.
const (
	changeMay  = 1 // it may be reported in the call
	changeMust = 2 // it ended the call, so it must be reported in it
)
