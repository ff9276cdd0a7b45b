package poll

import (
	"strconv"
	"strings"

	"github.com/unipoll/unipoll/sys"
)

// Token identifies a registered source in the events Poll returns. The caller
// chooses it; unipoll never interprets it. One value, ReservedToken, is
// refused.
//
// Nor does unipoll check that a Token is unused: two sources registered
// under one Token with one Poll are accepted, as mio accepts them, and
// each is reported under it, so their events cannot be told apart. That is
// almost always a bug (a token reused before its source was deregistered).
// Built with the unipoll_debug tag, the Poll counts such registrations in
// Stats.SharedTokens, so that a test can assert there were none.
type Token uint64

// ReservedToken is the one Token a caller may not register (ErrReservedToken):
// it is kept free so that a layer built on Poll can give it to a source of
// its own without colliding with its users' tokens.
const ReservedToken = Token(^uint64(0))

// Ready is a set of readiness kinds: in an interest set, what the caller
// wants to hear about; in an Event, what happened.
type Ready uint32

// Readiness kinds.
//
// A hang-up or error also makes a source readable and writable (the next read
// or write returns EOF or the error), so a caller interested only in Readable
// still hears about them; Error and Hup themselves are reported only when
// they are in the interest set.
const (
	Readable = Ready(sys.Readable)
	Writable = Ready(sys.Writable)
	Error    = Ready(sys.Error)
	Hup      = Ready(sys.Hup)
	Priority = Ready(sys.Priority)
)

// allReady is every valid readiness bit.
const allReady = Readable | Writable | Error | Hup | Priority

// IsEmpty reports whether r has no readiness kind.
func (r Ready) IsEmpty() bool { return r == 0 }

// IsReadable reports whether r includes Readable.
func (r Ready) IsReadable() bool { return r&Readable != 0 }

// IsWritable reports whether r includes Writable.
func (r Ready) IsWritable() bool { return r&Writable != 0 }

// IsError reports whether r includes Error.
func (r Ready) IsError() bool { return r&Error != 0 }

// IsHup reports whether r includes Hup.
func (r Ready) IsHup() bool { return r&Hup != 0 }

// IsPriority reports whether r includes Priority.
func (r Ready) IsPriority() bool { return r&Priority != 0 }

// Contains reports whether every kind in o is also in r.
func (r Ready) Contains(o Ready) bool { return r&o == o }

var readyNames = [...]struct {
	bit  Ready
	name string
}{{Readable, "Readable"}, {Writable, "Writable"}, {Error, "Error"}, {Hup, "Hup"}, {Priority, "Priority"}}

// String lists the kinds joined by "|", for example "Readable|Hup", or
// "Empty".
func (r Ready) String() string {
	if r == 0 {
		return "Empty"
	}
	var b strings.Builder
	for _, n := range readyNames {
		if r&n.bit != 0 {
			if b.Len() > 0 {
				b.WriteByte('|')
			}
			b.WriteString(n.name)
		}
	}
	if rest := r &^ allReady; rest != 0 {
		if b.Len() > 0 {
			b.WriteByte('|')
		}
		b.WriteString("0x")
		b.WriteString(strconv.FormatUint(uint64(rest), 16))
	}
	return b.String()
}

// PollOpt is a trigger mode: Edge or Level, optionally with Oneshot. Level
// is the default: the zero PollOpt means Level, and Oneshot alone means
// Level|Oneshot. Edge and Level together, or bits that are none of the
// three, are refused with ErrInvalidOpts.
type PollOpt uint8

// Trigger modes; see the package documentation for their exact meaning.
const (
	// Edge reports a source once each time new readiness arrives.
	//
	// The rule for portable code: every event starts a pass, and a pass
	// does the operation (read, write, accept) until it returns EAGAIN.
	// A read of a stream socket may also end the pass at a short read,
	// which means the socket was drained at that moment (unless the event
	// reported Hup: the peer's end of stream is already there and makes
	// no new edge, so read on to EOF). After an EAGAIN or short read on a
	// raw Fd, call Fd.Drained; the socket package's types do that
	// themselves. Where the kernel triggers edges natively (epoll, kqueue)
	// Drained costs nothing; where the backend emulates them (poll(2)) a
	// reported condition stays out of the kernel's view until the pass
	// ends (or the source is reregistered), so it is
	// reported once rather than on every Poll, and nothing is lost by a
	// caller who follows the rule. A caller that stops a pass early (for
	// back-pressure, say) resumes it later and calls Drained when it ends.
	//
	// An event carries the kinds that made the edge; under emulation (and
	// on kqueue, whose read and write filters trigger separately) it may
	// leave out a kind an earlier event already reported.
	Edge = PollOpt(sys.Edge)
	// Level reports a source on every Poll while it is ready.
	Level = PollOpt(sys.Level)
	// Oneshot disarms a source after one event until it is reregistered.
	Oneshot = PollOpt(sys.Oneshot)
)

// IsEdge reports whether o is edge-triggered.
func (o PollOpt) IsEdge() bool { return o&Edge != 0 }

// IsLevel reports whether o is level-triggered.
func (o PollOpt) IsLevel() bool { return o&Edge == 0 }

// IsOneshot reports whether o includes Oneshot.
func (o PollOpt) IsOneshot() bool { return o&Oneshot != 0 }

// String is "Edge", "Level", "Edge|Oneshot" or "Level|Oneshot" for valid
// modes. An invalid one shows what is wrong with it: "Edge|Level", or the
// unknown bits in hexadecimal ("Edge|0x10").
func (o PollOpt) String() string {
	var parts []string
	switch {
	case o&(Edge|Level) == Edge|Level:
		parts = append(parts, "Edge", "Level")
	case o&Edge != 0:
		parts = append(parts, "Edge")
	case o&Level != 0 || o&^(Edge|Level|Oneshot) == 0:
		parts = append(parts, "Level")
	}
	if o&Oneshot != 0 {
		parts = append(parts, "Oneshot")
	}
	if rest := o &^ (Edge | Level | Oneshot); rest != 0 {
		parts = append(parts, "0x"+strconv.FormatUint(uint64(rest), 16))
	}
	return strings.Join(parts, "|")
}

// validate checks a registration's arguments and normalises the mode.
func validate(t Token, interest Ready, opts PollOpt) (PollOpt, error) {
	if t == ReservedToken {
		return 0, ErrReservedToken
	}
	switch {
	case interest == 0:
		return 0, wrapf(ErrInvalidInterest, "empty, so the source could never be reported")
	case interest&^allReady != 0:
		return 0, wrapf(ErrInvalidInterest, "%s: unknown bits 0x%x", interest, uint32(interest&^allReady))
	}
	switch {
	case opts&^(Edge|Level|Oneshot) != 0:
		return 0, wrapf(ErrInvalidOpts, "opts %s: unknown bits 0x%x", opts, uint8(opts&^(Edge|Level|Oneshot)))
	case opts&(Edge|Level) == Edge|Level:
		return 0, wrapf(ErrInvalidOpts, "opts %s: Edge and Level together, choose one", opts)
	}
	if opts&Edge == 0 {
		opts |= Level
	}
	return opts, nil
}

func sysMode(o PollOpt) sys.Mode { return sys.Mode(o) }
