//go:build linux

package proptest

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
)

// The crowd: a population of Registrations far larger than the sources of
// the rest of the model (1,000 to 3,000, past the held list's heldKeep of
// 1,024), registered with the world's Poll under the tokens crowdBase+i,
// and made ready, unset, re-armed and closed in bursts over ranges of it.
// It exists to drive the consumer's held list (poll/held.go) through its
// growth, wrap-around, idle release and trim under the model: every event
// of a crowd member is checked exactly like a source's (a current token,
// readiness&interest at delivery, at most one per call, level ones on
// every call while ready, edge ones once per burst that reached their
// interest, oneshot ones once until re-armed, nothing after Close), and
// a call that did not fill its buffer must report every member that is
// owed one. A burst may also come from another goroutine while the world
// blocks in Poll(-1) (CrowdBurstBlocked).
//
// Members are not sources of the world (src): they have no kind and are
// not drawn one by one, which keeps a case's draws and the model's
// per-call work proportional to the steps, not to the population.

const (
	crowdBase = poll.Token(1_000_000)
	crowdMin  = 1000
	crowdMax  = 3000
)

var crowdInterests = []poll.Ready{poll.Readable, poll.Readable | poll.Writable, poll.Writable | poll.Hup, allInterest}

// crowdMember is the model of one member.
type crowdMember struct {
	r        *poll.Registration
	sr       *poll.SetReadiness
	interest poll.Ready
	opts     poll.PollOpt
	rd       poll.Ready // readiness
	armed    bool       // oneshot: false after its event, until re-armed
	owed     bool       // an edge reached the interest since its last event
	mayFire  bool       // an event may come (an edge whose timing is unknown)
	inflight poll.Ready // bits a concurrent burst sets during the current call
	missed   waited     // consecutive full calls without its owed event
	closed   bool
}

// crowd is the population; nil until the Crowd step.
type crowd struct {
	m    []*crowdMember
	live int
}

func (c *crowd) owns(tok poll.Token) bool {
	return c != nil && tok >= crowdBase && tok < crowdBase+poll.Token(len(c.m))
}

func (c *crowd) liveCount() int {
	if c == nil {
		return 0
	}
	return c.live
}

// must and may are as in checkCall, for a member before a call.
func (m *crowdMember) must() bool {
	return !m.closed && m.armed && m.rd&m.interest != 0 && (m.opts.IsLevel() || m.owed)
}

func (m *crowdMember) may() bool {
	return !m.closed && m.armed && m.rd&m.interest != 0 && (m.opts.IsLevel() || m.owed || m.mayFire)
}

// mustReturn reports whether a member must be reported.
func (c *crowd) mustReturn() bool {
	if c == nil {
		return false
	}
	for _, m := range c.m {
		if m.must() {
			return true
		}
	}
	return false
}

// reportable reports whether a member may be reported.
func (c *crowd) reportable() bool {
	if c == nil {
		return false
	}
	for _, m := range c.m {
		if m.may() {
			return true
		}
	}
	return false
}

func (c *crowd) String() string {
	var ready, owed, closed int
	for _, m := range c.m {
		switch {
		case m.closed:
			closed++
		case m.must():
			owed++
		case m.rd&m.interest != 0:
			ready++
		}
	}
	return fmt.Sprintf("crowd of %d: %d must be reported, %d more ready for their interest, %d closed", len(c.m), owed, ready, closed)
}

// Crowd registers the population (once per world).
func (w *world) Crowd(t *rapid.T) {
	if w.crowd != nil || w.closed {
		t.Skip("one crowd per world")
	}
	n := rapid.IntRange(crowdMin, crowdMax).Draw(t, "crowd size")
	modes := rapid.SliceOfN(rapid.SampledFrom(optsChoices), 1, 4).Draw(t, "crowd modes (cyclic)")
	interests := rapid.SliceOfN(rapid.SampledFrom(crowdInterests), 1, 3).Draw(t, "crowd interests (cyclic)")
	c := &crowd{m: make([]*crowdMember, n), live: n}
	w.crowd = c
	for i := range c.m {
		m := &crowdMember{interest: interests[i%len(interests)], opts: modes[i%len(modes)], armed: true}
		if m.opts.IsLevel() {
			m.opts |= poll.Level
		}
		m.r, m.sr = poll.NewRegistration()
		c.m[i] = m
		if err := w.p.Register(m.r, crowdBase+poll.Token(i), m.interest, m.opts); err != nil {
			w.fatalf(t, "Register crowd member %d: %v", i, err)
		}
	}
	w.logf("crowd: %d Registrations, tokens %d+i, modes %v and interests %v by turns, none ready", n, crowdBase, modes, interests)
}

// drawRange draws members: count of them from start, every stride-th,
// wrapping around, each at most once.
func (c *crowd) drawRange(t *rapid.T) (idx []int, desc string) {
	n := len(c.m)
	start := rapid.IntRange(0, n-1).Draw(t, "crowd range start")
	count := rapid.IntRange(1, n).Draw(t, "crowd range count")
	stride := rapid.IntRange(1, 3).Draw(t, "crowd range stride")
	seen := make([]bool, n)
	for k, i := 0, start; k < count; k, i = k+1, (i+stride)%n {
		if seen[i] {
			break
		}
		seen[i] = true
		idx = append(idx, i)
	}
	return idx, fmt.Sprintf("crowd[%d, +%d every %d: %d members]", start, count, stride, len(idx))
}

func (w *world) needCrowd(t *rapid.T) *crowd {
	if w.crowd == nil || w.crowd.live == 0 || w.closed {
		t.Skip("no crowd")
	}
	return w.crowd
}

// CrowdBurst sets readiness on a range of members.
func (w *world) CrowdBurst(t *rapid.T) {
	c := w.needCrowd(t)
	idx, desc := c.drawRange(t)
	bits := poll.Ready(rapid.Uint32Range(1, 31).Draw(t, "crowd readiness"))
	for _, i := range idx {
		m := c.m[i]
		err := m.sr.SetReadiness(bits)
		if m.closed {
			w.expectErr(t, "SetReadiness of a closed crowd member", err, poll.ErrClosed)
			continue
		}
		w.expectErr(t, fmt.Sprintf("SetReadiness of crowd member %d", i), err, nil)
		m.set(bits)
	}
	w.logf("%s.SetReadiness(%s)", desc, bits)
}

// set applies a SetReadiness that returned to the model.
func (m *crowdMember) set(bits poll.Ready) {
	m.rd |= bits
	if m.armed && bits&m.interest != 0 {
		m.owed = true // only bits of the interest make an edge
	}
}

// CrowdUnset clears readiness on a range of members.
func (w *world) CrowdUnset(t *rapid.T) {
	c := w.needCrowd(t)
	idx, desc := c.drawRange(t)
	bits := poll.Ready(rapid.Uint32Range(1, 31).Draw(t, "crowd readiness"))
	for _, i := range idx {
		m := c.m[i]
		err := m.sr.UnsetReadiness(bits)
		if m.closed {
			w.expectErr(t, "UnsetReadiness of a closed crowd member", err, poll.ErrClosed)
			continue
		}
		w.expectErr(t, fmt.Sprintf("UnsetReadiness of crowd member %d", i), err, nil)
		m.rd &^= bits
	}
	w.logf("%s.UnsetReadiness(%s)", desc, bits)
}

// CrowdRearm reregisters a range of members under their own tokens, with a
// drawn interest: it re-arms oneshot ones, and those ready for the new
// interest are owed an event (rule 5).
func (w *world) CrowdRearm(t *rapid.T) {
	c := w.needCrowd(t)
	idx, desc := c.drawRange(t)
	interest := rapid.SampledFrom(crowdInterests).Draw(t, "crowd interest")
	for _, i := range idx {
		m := c.m[i]
		err := w.p.Reregister(m.r, crowdBase+poll.Token(i), interest, m.opts)
		if m.closed {
			w.expectErr(t, "Reregister of a closed crowd member", err, poll.ErrClosed)
			continue
		}
		w.expectErr(t, fmt.Sprintf("Reregister of crowd member %d", i), err, nil)
		m.interest, m.armed = interest, true
		m.missed.reset()
		m.owed, m.mayFire = m.rd&interest != 0, false
	}
	w.logf("%s: Reregister(same tokens, %s)", desc, interest)
}

// CrowdClose closes a range of members: none of them may be reported by a
// later call (rule 7).
func (w *world) CrowdClose(t *rapid.T) {
	c := w.needCrowd(t)
	idx, desc := c.drawRange(t)
	for _, i := range idx {
		c.close(t, w, i)
	}
	w.logf("%s.Close()", desc)
}

func (c *crowd) close(t *rapid.T, w *world, i int) {
	m := c.m[i]
	err := m.r.Close()
	if m.closed {
		w.expectErr(t, "second Close of a crowd member", err, poll.ErrClosed)
		return
	}
	w.expectErr(t, fmt.Sprintf("Close of crowd member %d", i), err, nil)
	m.closed = true
	c.live--
}

// PollMany is a non-blocking Poll with a buffer big enough for much of the
// crowd.
func (w *world) PollMany(t *rapid.T) {
	if w.crowd == nil {
		t.Skip("no crowd")
	}
	w.poll(t, rapid.IntRange(9, crowdMax+16).Draw(t, "capacity (many)"), 0)
}

// CrowdBurstBlocked: another goroutine sets readiness on a range of members
// while the world blocks in Poll(-1) (at once, or once the poller sleeps).
func (w *world) CrowdBurstBlocked(t *rapid.T) {
	c := w.needCrowd(t)
	idx, desc := c.drawRange(t)
	bits := poll.Ready(rapid.Uint32Range(1, 31).Draw(t, "crowd readiness"))
	ends := w.mustReturn()
	for _, i := range idx {
		if m := c.m[i]; !m.closed && m.armed && bits&m.interest != 0 {
			ends = true
		}
	}
	if !ends {
		t.Skip("nothing would end Poll(-1)")
	}
	b := &crowdBurst{c: c, idx: idx, desc: desc, bits: bits, done: make(chan struct{})}
	b.atOnce = rapid.IntRange(0, 3).Draw(t, "when (0: at once, else once the poller sleeps)") == 0
	capacity := rapid.IntRange(1, 64).Draw(t, "capacity")
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.probe = probeThisThread()
	w.pollDuring(t, capacity, -1, b)
}

// crowdBurst is the other goroutine's work in CrowdBurstBlocked.
type crowdBurst struct {
	c      *crowd
	idx    []int
	desc   string
	bits   poll.Ready
	atOnce bool
	probe  *threadProbe
	ret    atomic.Bool
	done   chan struct{}
	mu     sync.Mutex
	errs   []string
}

func (b *crowdBurst) start(p *poll.Poll) {
	go func() {
		defer close(b.done)
		if !b.atOnce {
			b.probe.waitAsleep(blockLimit, &b.ret)
		}
		for _, i := range b.idx {
			m := b.c.m[i]
			err := m.sr.SetReadiness(b.bits)
			if (err == nil) == m.closed {
				b.mu.Lock()
				b.errs = append(b.errs, fmt.Sprintf("SetReadiness of crowd member %d (closed %v) = %v", i, m.closed, err))
				b.mu.Unlock()
			}
		}
	}()
}

func (b *crowdBurst) returned() { b.ret.Store(true) }

func (b *crowdBurst) join(t *rapid.T, w *world) {
	select {
	case <-b.done:
	case <-time.After(blockLimit):
		w.fatalf(t, "the burst of SetReadiness on %s did not end within %v", b.desc, blockLimit)
	}
	w.logf("during Poll#%d, from another goroutine: %s.SetReadiness(%s)", w.calls+1, b.desc, b.bits)
	if len(b.errs) > 0 {
		w.fatalf(t, "burst: %v", b.errs)
	}
	for _, i := range b.idx {
		if m := b.c.m[i]; !m.closed {
			m.inflight |= b.bits
		}
	}
}

// check compares every member's Readiness with the model.
func (c *crowd) check(t *rapid.T, w *world) {
	if c == nil {
		return
	}
	for i, m := range c.m {
		if got := m.sr.Readiness(); got != m.rd {
			w.fatalf(t, "crowd member %d: Readiness() = %s, but the model has %s", i, got, m.rd)
		}
	}
}

// checkCall checks the crowd's part of one Poll call and advances its
// model; drained and bound are the call's, as for sources.
func (c *crowd) checkCall(t *rapid.T, w *world, call *pollCall, drained bool, bound int) {
	if c == nil {
		return
	}
	for i, m := range c.m {
		tok := crowdBase + poll.Token(i)
		before, after := m.rd, m.rd|m.inflight
		level := m.opts.IsLevel()
		armed := m.armed && !m.closed
		sure := before & m.interest
		maybe := after & m.interest
		fired := m.inflight & m.interest // set by a burst during the call
		must := armed && sure != 0 && (level || m.owed)
		may := armed && maybe != 0 && (level || m.owed || m.mayFire || fired != 0)
		r, reported := call.got[tok]
		if reported {
			label := fmt.Sprintf("crowd member %d (token %d, %s, %s)", i, tok, m.interest, m.opts)
			switch {
			case m.closed:
				w.fatalf(t, "Poll#%d reported %s with %s after it was closed (rule 7)", call.idx, label, r)
			case !m.armed:
				w.fatalf(t, "Poll#%d reported %s with %s again although it is oneshot and was not reregistered since its event (rule 4)", call.idx, label, r)
			case r == 0:
				w.fatalf(t, "Poll#%d reported %s with empty readiness", call.idx, label)
			case r&^m.interest != 0:
				w.fatalf(t, "Poll#%d reported %s with %s, outside its interest (rule 6)", call.idx, label, r)
			case r&^maybe != 0:
				w.fatalf(t, "Poll#%d reported %s with %s, but only %s can be ready (stale or invented readiness)", call.idx, label, r, maybe)
			case sure&^r != 0:
				w.fatalf(t, "Poll#%d reported %s with %s, missing %s which is ready (incomplete event)", call.idx, label, r, sure&^r)
			case !may:
				w.fatalf(t, "Poll#%d reported %s with %s, but nothing new arrived since its last event (rule 2: one notification per edge)", call.idx, label, r)
			}
			if !must {
				totals.spurious.Add(1)
			}
			m.missed.reset()
			switch {
			case m.opts.IsOneshot():
				m.armed, m.owed, m.mayFire = false, false, false
			case level:
				m.owed, m.mayFire = false, false
			case fired&^r != 0:
				// The event lacks bits the burst set: they came after it,
				// a new edge.
				m.owed, m.mayFire = true, false
			default:
				// The burst's bits are in the event: it came before, unless
				// they were set already, which cannot be told.
				m.owed, m.mayFire = false, fired != 0 && fired&^before == 0
			}
		} else {
			if must {
				if drained {
					w.fatalf(t, "Poll#%d did not report crowd member %d (token %d, %s, %s, ready %s) although it had room (%d of %d): a lost event (rules %s)",
						call.idx, i, tok, m.interest, m.opts, sure, len(call.order), call.capacity, crowdRules(m))
				}
				totals.carried.Add(1)
				if m.missed.miss(bound) {
					w.fatalf(t, "crowd member %d (token %d, %s, %s, ready %s) was not reported by %d consecutive Poll calls that were full: starved (rules 8, 11)",
						i, tok, m.interest, m.opts, sure, m.missed.calls)
				}
			} else {
				m.missed.reset()
			}
			if armed && fired != 0 {
				m.owed = true // set during the call, before or after its end
			}
			if drained && fired == 0 {
				m.mayFire = false
				if m.owed && sure == 0 {
					m.owed = false // for readiness that is gone (rule 6)
				}
			}
		}
		m.rd, m.inflight = after, 0
	}
}

func crowdRules(m *crowdMember) string {
	switch {
	case m.opts.IsOneshot():
		return "4, 5, 8"
	case m.opts.IsLevel():
		return "3, 8"
	default:
		return "2, 8"
	}
}

// settle ends a check of the crowd: calls with room for all of it, which
// must report every member owed an event, then Close of every member
// still open, after which none may be reported (the world's own settle
// follows).
func (c *crowd) settle(t *rapid.T, w *world) {
	if c == nil || c.live == 0 {
		return
	}
	for i := 0; i < 2; i++ {
		w.poll(t, len(c.m)+16, 0)
	}
	for i := range c.m {
		if !c.m[i].closed {
			c.close(t, w, i)
		}
	}
	w.logf("crowd closed")
}

// discard closes every member without checking anything.
func (c *crowd) discard() {
	if c == nil {
		return
	}
	for _, m := range c.m {
		if m != nil {
			_ = m.r.Close()
		}
	}
}

// crowdActions are the crowd's steps, for a state machine that has them
// besides world.actions.
func (w *world) crowdActions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"Crowd":             w.Crowd,
		"CrowdBurst":        w.CrowdBurst,
		"CrowdUnset":        w.CrowdUnset,
		"CrowdRearm":        w.CrowdRearm,
		"CrowdClose":        w.CrowdClose,
		"CrowdBurstBlocked": w.CrowdBurstBlocked,
		"PollMany":          w.PollMany,
	}
}
