//go:build linux

package proptest

import (
	"fmt"
	"strings"
)

// chanPending is the model of a channel's values sent and not yet
// received, in the order the Receiver must return them.
//
// Values sent by the test goroutine one after the other have one order.
// Values of blocked Sends that one receive let go on together raced each
// other into the queue (each by its own goroutine), so they form a group:
// its members may come out in any order, but all after the values before
// the group and before those after it (they were all in the queue, or
// blocked, when the next step began). That is each Sender's order and no
// more: two values of one group were never sent one after the other.
//
// given counts the values at the front (in the order they come out) that
// a Drain handed back when its loop stopped early: its batch counted them
// as received already, so they take no capacity of a bounded channel, and
// taking them later gives none back.
type chanPending struct {
	vals   []chanVal
	given  int
	groups int // the group number last handed out
}

// chanVal is one value pending; blocked: a producer's, whose Send was
// blocked (model_channel_blocked.go).
type chanVal struct {
	v, group int
	blocked  bool
}

// chanDrainBatch is package channel's drainBatch: how many values one
// batch of a Drain takes at most (all that can be received now, up to
// this many), and gives the capacity of back at once.
const chanDrainBatch = 64

// push appends v, sent by the test goroutine.
func (p *chanPending) push(v int) {
	p.groups++
	p.vals = append(p.vals, chanVal{v: v, group: p.groups})
}

// pushBlocked appends the values of blocked Sends that went on together,
// as one group.
func (p *chanPending) pushBlocked(vals ...int) {
	p.groups++
	for _, v := range vals {
		p.vals = append(p.vals, chanVal{v: v, group: p.groups, blocked: true})
	}
}

// used is how much of a bounded channel's capacity the pending values
// take.
func (p *chanPending) used() int { return len(p.vals) - p.given }

// next describes what the next receive may return: the front group.
func (p *chanPending) next(b *blockedSends) string {
	front := p.front()
	switch {
	case len(front) == 0:
		return "nothing (none pending)"
	case front[0].blocked:
		return fmt.Sprintf("one of the %d values of blocked Sends that went on together", len(front))
	default:
		return b.show(front[0].v)
	}
}

// front is the front group.
func (p *chanPending) front() []chanVal {
	for i, cv := range p.vals {
		if cv.group != p.vals[0].group {
			return p.vals[:i]
		}
	}
	return p.vals
}

// take removes v, which a receive returned, and reports whether the
// receive could return it (it is in the front group).
func (p *chanPending) take(v int) bool {
	for i, cv := range p.vals {
		if cv.group != p.vals[0].group {
			break
		}
		if cv.v == v {
			p.vals = append(p.vals[:i], p.vals[i+1:]...)
			if p.given > 0 {
				p.given--
				totalsChan.givenTaken.Add(1)
			}
			return true
		}
	}
	return false
}

// String lists the values pending, those of blocked Sends by number only
// (see model_channel_blocked.go).
func (p *chanPending) String() string {
	var parts []string
	for i := 0; i < len(p.vals); {
		cv := p.vals[i]
		if !cv.blocked {
			parts = append(parts, fmt.Sprint(cv.v))
			i++
			continue
		}
		n := 1
		for i+n < len(p.vals) && p.vals[i+n].group == cv.group {
			n++
		}
		parts = append(parts, fmt.Sprintf("{%d values of blocked Sends}", n))
		i += n
	}
	out := "[" + strings.Join(parts, " ") + "]"
	if p.given > 0 {
		out += fmt.Sprintf(", the first %d handed back by a Drain", p.given)
	}
	return out
}
