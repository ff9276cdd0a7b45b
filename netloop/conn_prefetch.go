package netloop

import (
	"unsafe"

	"github.com/unipoll/unipoll/internal/base/prefetch"
)

// The lines a call of a Conn touches, named to the Loop ahead of the call
// (eventloop's ahead.go): among thousands of Conns, a call's first touch
// of its Conn, of its relay and of the relay's peer is a cache miss each.

var (
	connLines  = lineCount(unsafe.Sizeof(Conn{}))
	relayLines = lineCount(unsafe.Sizeof(relay{}))
)

func lineCount(size uintptr) int {
	return (int(size) + prefetch.LineSize - 1) / prefetch.LineSize
}

// PrefetchHint: Far, two calls ahead, the Conn itself (its address, no
// load); Near, the call before, its relay, read through the Conn's lines
// that Far brought in. It reads only what may be read from any goroutine
// (the relay's pointer is atomic), since it runs outside the Conn's call.
func (cs *source) PrefetchHint(s prefetch.Stage) {
	c := (*Conn)(cs)
	if s == prefetch.Far {
		prefetch.Span(unsafe.Pointer(c), connLines)
		return
	}
	if r := c.rl.next.Load(); r != nil && r != relayGone {
		prefetch.Span(unsafe.Pointer(r), relayLines)
	}
}

// prefetchPeer asks for the peer's lines at the start of a relay call: the
// call reaches them after its own sink's work (a splice, often), which
// covers the miss.
func prefetchPeer(peer *Conn) { prefetch.Span(unsafe.Pointer(peer), connLines) }
