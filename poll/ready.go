package poll

import (
	"strings"

	"github.com/unipoll/unipoll/sys"
)

// Token identifies a registered source in the events Poll returns. The caller
// chooses it; unipoll never interprets it. The largest value is reserved for
// unipoll's own use (see ErrReservedToken).
type Token uint64

// reservedToken is refused at registration so that layers built on Poll
// (the event loop) can use it for their own sources without colliding.
const reservedToken = Token(^uint64(0))

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
		b.WriteString(strings.ToLower(hex32(uint32(rest))))
	}
	return b.String()
}

// PollOpt is a trigger mode: exactly one of Edge and Level, optionally with
// Oneshot. Oneshot alone means Level|Oneshot.
type PollOpt uint8

// Trigger modes; see the package documentation for their exact meaning.
const (
	// Edge reports a source once each time new readiness arrives.
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

// String is "Edge", "Level", "Edge|Oneshot" or "Level|Oneshot".
func (o PollOpt) String() string {
	s := "Level"
	if o&Edge != 0 {
		s = "Edge"
	}
	if o&Oneshot != 0 {
		s += "|Oneshot"
	}
	if rest := o &^ (Edge | Level | Oneshot); rest != 0 {
		s += "|0x" + hex32(uint32(rest))
	}
	return s
}

func hex32(v uint32) string {
	const digits = "0123456789abcdef"
	if v == 0 {
		return "0"
	}
	var buf [8]byte
	i := len(buf)
	for v > 0 {
		i--
		buf[i] = digits[v&0xf]
		v >>= 4
	}
	return string(buf[i:])
}

// validate checks a registration's arguments and normalises the mode.
func validate(t Token, interest Ready, opts PollOpt) (PollOpt, error) {
	if t == reservedToken {
		return 0, ErrReservedToken
	}
	if interest&^allReady != 0 {
		return 0, wrapf(ErrInvalidInterest, "interest %s", interest)
	}
	if opts&^(Edge|Level|Oneshot) != 0 || opts&(Edge|Level) == Edge|Level {
		return 0, wrapf(ErrInvalidOpts, "opts %s", opts)
	}
	if opts&Edge == 0 {
		opts |= Level
	}
	return opts, nil
}

func sysMode(o PollOpt) sys.Mode { return sys.Mode(o) }
