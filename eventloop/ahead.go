package eventloop

import (
	"unsafe"

	"github.com/unipoll/unipoll/internal/base/prefetch"
)

// Dispatching ahead: a Loop with thousands of sources finds each event's
// entry, handler and the handler's state cold, and a call stalls on each
// in turn (in a proxy of 1,000 pairs, the entry, the Conn and its relay
// were three misses a call, about 3% of its CPU; with the hints, 3% less
// CPU per 64 KiB message and no change at 16 B: bench/GAPS.md, "Proxy").
// While event i is dispatched,
// the lines of the next events are asked for in a pipeline, each step
// using only what the step before brought in, so that no hint waits on a
// miss:
//
//	event i+3: its entry (the address is arithmetic on the table)
//	event i+2: the handler's own lines (Hinter, Far)
//	event i+1: what those lines point to (Hinter, Near)
//
// Hints cost a few nanoseconds an event and are wasted when everything
// is in the cache anyway, so a Loop asks only when it holds more sources
// than aheadFrom and the Poll returned at least aheadBatch events.
const (
	aheadFrom  = 512
	aheadBatch = 4
	entryLines = (int(unsafe.Sizeof(entry{})) + prefetch.LineSize - 1) / prefetch.LineSize
)

// ahead asks for the lines of the events after i (of n) in w's batch.
func (l *Loop) ahead(w *worker, i, n int) {
	if j := i + 3; j < n {
		if e := l.aheadEntry(w, j); e != nil {
			prefetch.Span(unsafe.Pointer(e), entryLines)
		}
	}
	if j := i + 2; j < n {
		if e := l.aheadEntry(w, j); e != nil {
			if h := e.hint.Load(); h != nil {
				h.PrefetchHint(prefetch.Far)
			}
		}
	}
	if j := i + 1; j < n {
		if e := l.aheadEntry(w, j); e != nil {
			if h := e.hint.Load(); h != nil {
				h.PrefetchHint(prefetch.Near)
			}
		}
	}
}

// hintRef holds a Hinter behind one pointer (entry invariant 6).
type hintRef struct{ prefetch.Hinter }

// aheadEntry is the entry of event j of w's batch if it is the Loop's.
// Only its hint is read, without a claim (entry invariant 6): an entry
// that is being removed or reused costs lines fetched for nothing.
func (l *Loop) aheadEntry(w *worker, j int) *entry {
	ev := w.events.At(j)
	if !IsLoopToken(ev.Token) {
		return nil
	}
	e, _ := l.tab.lookup(ev.Token)
	return e
}
