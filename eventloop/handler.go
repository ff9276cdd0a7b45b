package eventloop

import "github.com/unipoll/unipoll/poll"

// Handler receives the events Run does not route to a per-source handler:
// those of sources registered directly on Loop.Poll with the caller's own
// tokens. A Handler that also implements Ticker is told when each
// iteration ends.
type Handler interface {
	Ready(l *Loop, ev poll.Event)
}

// Ticker is implemented by a Run Handler that wants a call at the end of
// every iteration of the loop, after the iteration's events have been
// dispatched: the place for work that batches across events (flushing,
// statistics, a deadline check).
type Ticker interface {
	Tick(l *Loop)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(l *Loop, ev poll.Event)

// Ready calls f(l, ev).
func (f HandlerFunc) Ready(l *Loop, ev poll.Event) { f(l, ev) }

// SourceHandler handles the events of one source added with Loop.Add. Its
// Ready is never called concurrently with itself, also with several
// workers, and returns what the Loop is to do with the source next.
//
// ev.Token is the token Add returned; ev.Ready is the readiness that
// arrived since the last call (several events that arrived while the
// handler was running or waiting its turn are merged into one call).
// Spurious calls are possible, as spurious events are (see the poll
// contract, rule 9): use non-blocking I/O.
type SourceHandler interface {
	Ready(l *Loop, ev poll.Event) Action
}

// Remover is implemented by a SourceHandler that wants to know when its
// source has left the Loop for good: Removed runs once, on the Loop, after
// Remove (or the Remove action, or Close) and after the handler's last
// Ready has returned. It is the place to close the source's descriptor:
// closing it earlier could hand its number to a new descriptor while a
// call for the old one is still running.
type Remover interface {
	Removed(l *Loop, t poll.Token)
}

// SourceFunc adapts a function to SourceHandler.
type SourceFunc func(l *Loop, ev poll.Event) Action

// Ready calls f(l, ev).
func (f SourceFunc) Ready(l *Loop, ev poll.Event) Action { return f(l, ev) }

// Action is what a SourceHandler asks the Loop to do with its source after
// Ready returns. The same changes can be made from any goroutine with
// Loop.Rearm, Loop.Disarm and Loop.Remove. A value that is none of the
// four is taken as Keep.
type Action uint8

const (
	// Keep leaves the source as it is: the handler is called at the next
	// event the source's trigger mode produces (the next edge, the next
	// Poll while it is ready under Level, never again under Oneshot until
	// rearmed).
	Keep Action = iota
	// Again asks for another call if the source may still be ready, even
	// with no new edge: the handler stopped early (its share of an
	// iteration is used up) and wants to continue after the others have
	// had their turn. It also re-enables a Oneshot or disarmed source
	// (through Poll.Reregister, which reports a source that is already
	// ready at once). For an armed Edge or Level source it costs no system
	// call: the source is queued for the next iteration with the
	// readiness it had.
	Again
	// Disarm stops events for the source until Loop.Rearm; it stays on
	// the Loop. Readiness that arrives meanwhile is not lost: Rearm
	// reports a source that is ready.
	Disarm
	// Remove takes the source off the Loop, as Loop.Remove does: the
	// handler is not called again, and its Removed runs once Ready has
	// returned.
	Remove
)

var actionNames = [...]string{Keep: "Keep", Again: "Again", Disarm: "Disarm", Remove: "Remove"}

// String is the action's name, or "Action(n)" for a value that is none.
func (a Action) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return "Action(" + itoa(int(a)) + ")"
}

func itoa(v int) string {
	if v == 0 {
		return "0"
	}
	neg := v < 0
	if neg {
		v = -v
	}
	var b [20]byte
	i := len(b)
	for v > 0 {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
