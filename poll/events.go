package poll

import (
	"fmt"
	"iter"

	"github.com/unipoll/unipoll/sys"
)

// Event is one notification: the token the source was registered with and
// the readiness kinds that are ready, already masked by its interest (under
// Edge, see there for a kind an earlier event reported).
type Event struct {
	Token Token
	Ready Ready
}

// String formats the event as "Event{Token: 7, Ready: Readable}".
func (e Event) String() string {
	return fmt.Sprintf("Event{Token: %d, Ready: %s}", e.Token, e.Ready)
}

// Events is a reusable buffer that Poll fills. Its capacity bounds how many
// events one Poll call returns; sources that did not fit are reported by
// later calls. An Events must not be used by two Poll calls at once.
//
// Make one with NewEvents. The zero Events (and a nil *Events) has no room:
// Poll refuses it with ErrInvalidArgument, and it reads as empty.
type Events struct {
	buf []sysEvent // len is the number of events, cap the capacity
}

// NewEvents returns a buffer for up to capacity events (at least 1).
func NewEvents(capacity int) *Events {
	if capacity < 1 {
		capacity = 1
	}
	return &Events{buf: make([]sysEvent, 0, capacity)}
}

// Len is the number of events the last Poll stored.
func (e *Events) Len() int {
	if e == nil {
		return 0
	}
	return len(e.buf)
}

// Cap is the most events one Poll call can store.
func (e *Events) Cap() int {
	if e == nil {
		return 0
	}
	return cap(e.buf)
}

// At returns the i-th event; it panics if i is out of range, like a slice.
func (e *Events) At(i int) Event {
	ev := e.buf[i]
	return Event{Token: Token(ev.Key), Ready: Ready(ev.Ready)}
}

// All iterates over the stored events in order.
func (e *Events) All() iter.Seq[Event] {
	return func(yield func(Event) bool) {
		if e == nil {
			return
		}
		for _, ev := range e.buf {
			if !yield(Event{Token: Token(ev.Key), Ready: Ready(ev.Ready)}) {
				return
			}
		}
	}
}

// Clear empties the buffer; Poll does this itself before filling it.
func (e *Events) Clear() {
	if e != nil {
		e.buf = e.buf[:0]
	}
}

func (e *Events) full() bool { return len(e.buf) == cap(e.buf) }

func (e *Events) room() int { return cap(e.buf) - len(e.buf) }

func (e *Events) push(t Token, r Ready) {
	e.buf = append(e.buf, sysEvent{Key: uint64(t), Ready: uint32(r)})
}

type sysEvent = sys.Event
