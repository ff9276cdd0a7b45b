//go:build linux

package proptest

import (
	"fmt"
	"slices"

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
func (c *crowd) mustReturn() bool { return c.any((*crowdMember).must) }

// reportable reports whether a member may be reported.
func (c *crowd) reportable() bool { return c.any((*crowdMember).may) }

// any reports whether f holds for a member.
func (c *crowd) any(f func(*crowdMember) bool) bool {
	if c == nil {
		return false
	}
	return slices.ContainsFunc(c.m, f)
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
	w.crowdEach(t, "SetReadiness", (*poll.SetReadiness).SetReadiness, (*crowdMember).set)
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
	w.crowdEach(t, "UnsetReadiness", (*poll.SetReadiness).UnsetReadiness, func(m *crowdMember, bits poll.Ready) { m.rd &^= bits })
}

// crowdEach calls op, named name, with drawn readiness bits on a drawn
// range of members, and applies each call that returned to the model
// (a closed member must refuse with ErrClosed).
func (w *world) crowdEach(t *rapid.T, name string, op func(*poll.SetReadiness, poll.Ready) error, apply func(*crowdMember, poll.Ready)) {
	c := w.needCrowd(t)
	idx, desc := c.drawRange(t)
	bits := poll.Ready(rapid.Uint32Range(1, 31).Draw(t, "crowd readiness"))
	for _, i := range idx {
		m := c.m[i]
		err := op(m.sr, bits)
		if m.closed {
			w.expectErr(t, name+" of a closed crowd member", err, poll.ErrClosed)
			continue
		}
		w.expectErr(t, fmt.Sprintf("%s of crowd member %d", name, i), err, nil)
		apply(m, bits)
	}
	w.logf("%s.%s(%s)", desc, name, bits)
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
